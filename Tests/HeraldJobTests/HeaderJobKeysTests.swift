import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// The job keys that set APNs headers (`push.priority`, `push.expiration`, `push.collapse_id`,
/// `push.type` with `apns.topic`), as the loader reads and checks them, with their line.
@Suite struct HeaderJobKeysTests {
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
