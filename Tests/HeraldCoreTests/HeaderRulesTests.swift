import Foundation
import HeraldCore
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
}
