import Foundation
import HeraldCore
import HeraldPayload
import Testing

/// Apple's Examples 1–5 of "The Remote Notification Payload" in the Local and Remote Notification
/// Programming Guide (https://developer.apple.com/library/ios/documentation/NetworkingInternet/Conceptual/RemoteNotificationsPG/Chapters/TheNotificationPayload.html,
/// now archived; its successor is https://developer.apple.com/documentation/usernotifications/generating-a-remote-notification),
/// copied verbatim: a template without placeholders must come out as the same JSON, keys in order.
enum AppleExamples {
    static let all: [(name: String, text: String)] = [
        ("Example 1", """
        {
            "aps" : { "alert" : "Message received from Bob" },
            "acme2" : [ "bang",  "whiz" ]
        }
        """),
        ("Example 2", """
        {
            "aps" : {
                "alert" : {
                    "title" : "Game Request",
                    "body" : "Bob wants to play poker",
                    "action-loc-key" : "PLAY"
                },
                "badge" : 5
            },
            "acme1" : "bar",
            "acme2" : [ "bang",  "whiz" ]
        }
        """),
        ("Example 3", """
        {
            "aps" : {
                "alert" : "You got your emails.",
                "badge" : 9,
                "sound" : "bingbong.aiff"
            },
            "acme1" : "bar",
            "acme2" : 42
        }
        """),
        ("Example 4", """
        {
            "aps" : {
                "alert" : {
                    "loc-key" : "GAME_PLAY_REQUEST_FORMAT",
                    "loc-args" : [ "Jenna", "Frank"]
                },
                "sound" : "chime.aiff"
            },
            "acme" : "foo"
        }
        """),
        ("Example 5", """
        {
           "aps" : {
              "category" : "NEW_MESSAGE_CATEGORY",
              "alert" : {
                 "body" : "Acme message received from Johnny Appleseed",
                 "action-loc-key" : "VIEW"
              },
              "badge" : 3,
              "sound" : "chime.aiff"
           },
           "acme-account" : "jane.appleseed@apple.com",
           "acme-message" : "message123456"
        }
        """),
    ]

    /// The sample templates shipped in samples/templates/, next to this test tree.
    static func sample(_ n: Int) -> String? {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let url = root.appendingPathComponent("samples/templates/example\(n).json")
        return try? String(contentsOf: url, encoding: .utf8)
    }
}

@Suite struct AppleExamplesTests {
    @Test(arguments: AppleExamples.all.map(\.name))
    func literalExampleRoundTrips(name: String) throws {
        let text = try #require(AppleExamples.all.first { $0.name == name }?.text)
        let renderer = try PayloadRenderer(push: Fixture.push(text))
        let bytes = try #require(Fixture.bytes(renderer.render(Fixture.record([:]), locale: nil)))
        // Same values, same key order: the order-keeping parser compares both at once.
        #expect(TestJSON.parse(String(decoding: bytes, as: UTF8.self)) == TestJSON.parse(text))
        // And Foundation agrees they are equal JSON.
        let rendered = try #require(Fixture.foundationObject(bytes) as? NSDictionary)
        let original = try #require(Fixture.foundationObject(Array(text.utf8)) as? NSDictionary)
        #expect(rendered == original)
        // Compact output: no whitespace outside strings.
        #expect(bytes.count == Fixture.template(text).compactText.utf8.count)
    }

    @Test(arguments: 1...5)
    func sampleTemplateRendersWithDefaultsAndFields(n: Int) throws {
        let text = try #require(AppleExamples.sample(n), "samples/templates/example\(n).json is missing")
        let template = try #require(TestJSON.parse(text), "example\(n).json is not JSON")
        let renderer = try PayloadRenderer(push: PushSpec(type: .alert, priority: 10, template: template))
        let record = Fixture.record([
            "first_name": .string("Zoë"), "sender_name": .string("Ana \"Nana\" Lima"), "unread": .number("12"),
            "game_id": .string("g-42"), "email": .string("zoe@example.com"), "message_id": .string("m1"),
            "city": .string("Montréal"), "score": .number("7.5"), "opponent": .string("李雷"),
        ])
        let bytes = try #require(Fixture.bytes(renderer.render(record, locale: nil)), "\(Fixture.text(renderer.render(record, locale: nil)))")
        #expect(Fixture.foundationObject(bytes) is NSDictionary)
        let rendered = try #require(TestJSON.parse(String(decoding: bytes, as: UTF8.self)))
        // Same key order as Apple's example n.
        let apple = try #require(TestJSON.parse(AppleExamples.all[n - 1].text))
        #expect(keys(rendered) == keys(apple))
        #expect(keys(rendered["aps"]) == keys(apple["aps"]))
    }

    private func keys(_ value: JSONValue?) -> [String] {
        guard case .object(let members)? = value else { return [] }
        return members.map(\.key)
    }
}
