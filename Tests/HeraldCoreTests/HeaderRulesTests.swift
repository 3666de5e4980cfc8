import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// `apns-expiration` text, push type ↔ priority ↔ topic rules, and the job keys that set them.
@Suite struct HeaderRulesTests {
    @Test(arguments: [
        ("0", ExpirationSpec.immediate), ("3600", .relative(3600)), (" 90s ", .relative(90)), ("1h", .relative(3600)),
        ("7d", .relative(604_800)), ("999999999", .relative(999_999_999)), ("1000000000", .absolute(1_000_000_000)),
        ("1796083200", .absolute(1_796_083_200)), ("2026-12-01T00:00:00Z", .absolute(1_796_083_200)),
        ("2026-12-01T01:00:00+01:00", .absolute(1_796_083_200)), ("2026-12-01T00:00:00.250Z", .absolute(1_796_083_200)),
        ("2024-02-29T12:30:15+0100", .absolute(1_709_206_215)), ("1970-01-01T00:00:00Z", .absolute(0)),
    ])
    func expirationGrammar(text: String, expected: ExpirationSpec) {
        #expect(ExpirationText.parse(text) == expected)
    }

    @Test(arguments: ["", "-5", "1.5h", "soon", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z", "2026-12-01", "2026-12-01T00:00:00",
                      "2026-12-01T24:00:00Z", "2026-12-01T00:00:00Zjunk", "1969-12-31T23:59:59Z"])
    func expirationRejects(text: String) {
        #expect(ExpirationText.parse(text) == nil)
    }

    @Test func expirationAgreesWithFoundation() throws {
        let formatter = ISO8601DateFormatter()
        for text in ["2000-01-01T00:00:00Z", "2038-01-19T03:14:08Z", "2100-03-01T12:00:00Z", "2026-06-30T23:59:59-07:00"] {
            let date = try #require(formatter.date(from: text))
            #expect(ExpirationText.unixTime(rfc3339: text) == Int(date.timeIntervalSince1970), "\(text)")
        }
    }

    @Test func expirationHeaderValue() {
        #expect(ExpirationSpec.unset.headerValue(sentAt: 100) == nil)
        #expect(ExpirationSpec.immediate.headerValue(sentAt: 100) == 0)
        #expect(ExpirationSpec.relative(60).headerValue(sentAt: 100) == 160)
        #expect(ExpirationSpec.absolute(5).headerValue(sentAt: 100) == 5)
    }

    @Test func topicSuffixes() throws {
        #expect(try PushType.voip.topic(for: "com.example.app").get() == "com.example.app.voip")
        #expect(try PushType.voip.topic(for: "com.example.app.voip").get() == "com.example.app.voip")
        #expect(try PushType.pushtotalk.topic(for: "com.example.app").get() == "com.example.app.voip-ptt")
        #expect(try PushType.mdm.topic(for: "com.apple.mgmt.External.1234").get() == "com.apple.mgmt.External.1234")
        guard case .failure(let problem) = PushType.widgets.topic(for: "com.example.app.push-type.liveactivity") else {
            Issue.record("a liveactivity topic was accepted for widgets"); return
        }
        #expect(problem.description.contains("the suffix of liveactivity pushes; push.type widgets sends to com.example.app.push-type.widgets"))
    }

    // MARK: - Job keys

    let dir = TemporaryDirectory("job-headers")

    func load(push: String, topic: String = "com.example.app") throws -> JobSpec {
        try dir.write("a.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        let path = try dir.write("job.yaml", """
            campaign: headers
            audience: { files: [a.csv] }
            apns: { endpoint: simulator, topic: \(topic) }
            push:
              template: { aps: { alert: "hi" } }
            \(push)
            """)
        return try JobLoader.load(path: path)
    }

    func loadError(push: String, topic: String = "com.example.app") -> JobError? {
        do { _ = try load(push: push, topic: topic); return nil } catch { return error as? JobError }
    }

    @Test func templatedHeaderKeys() throws {
        let spec = try load(push: """
              priority: "{{prio|5}}"
              collapse_id: "order-{{order_id}}-\(String(repeating: "x", count: 60))"
              expiration: "{{expires_at}}"
            """)
        #expect(spec.push.priorityTemplate == "{{prio|5}}" && spec.push.priority == 10)
        #expect(spec.push.expirationTemplate == "{{expires_at}}" && spec.push.expiration == .unset)
        #expect(spec.push.collapseId == .fixed("order-{{order_id}}-\(String(repeating: "x", count: 60))"))
    }

    @Test func expirationKeyForms() throws {
        #expect(try load(push: "  expiration: 0").push.expiration == .immediate)
        #expect(try load(push: "  expiration: 1796083200").push.expiration == .absolute(1_796_083_200))
        #expect(try load(push: "  expiration: 2026-12-01T00:00:00Z").push.expiration == .absolute(1_796_083_200))
        #expect(try load(push: "  expiration: 7d").push.expiration == .relative(604_800))
        let error = try #require(loadError(push: "  expiration: soon"))
        #expect(error.description == "\(dir.file("job.yaml")) line 6: push.expiration must be 0, a duration (3600, 1h, 7d), a UNIX time or a UTC time like 2026-12-01T00:00:00Z or a {{field}} placeholder, not \"soon\"")
    }

    @Test func pushTypePriorityAndTopicAreCheckedWithTheirLine() throws {
        let background = try #require(loadError(push: "  type: background\n  priority: 10"))
        #expect(background.line == 7)
        #expect(background.message == "push.priority must be 5 for background pushes, not 10 (Apple: priority 10 is an error for background)")
        #expect(loadError(push: "  type: liveactivity\n  priority: 1")?.message == "push.priority must be 5 or 10 for liveactivity pushes, not 1")
        #expect(loadError(push: "  priority: 3")?.message == "push.priority must be 1, 5 or 10, not 3")
        #expect(loadError(push: "  type: background\n  priority: \"{{p}}\"")?.message == "push.priority must be 5 for background pushes, not a placeholder")
        #expect(loadError(push: "  priority: high")?.message == "push.priority must be 10, 5, 1 or a {{field}} placeholder, not \"high\"")
        let topic = try #require(loadError(push: "  type: alert", topic: "com.example.app.voip"))
        #expect(topic.line == 3)
        #expect(topic.message.hasPrefix("apns.topic com.example.app.voip ends in .voip, the suffix of voip pushes"))
        #expect(try load(push: "  type: voip", topic: "com.example.app.voip").push.type == .voip)
        #expect(try load(push: "  type: background").push.priority == 5)
        #expect(loadError(push: "  collapse_id: \(String(repeating: "c", count: 65))")?.message == "push.collapse_id must be at most 64 bytes (Apple: BadCollapseId)")
    }
}
