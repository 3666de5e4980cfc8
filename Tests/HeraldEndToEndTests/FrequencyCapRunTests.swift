import Foundation
import HeraldTestSupport
import Testing

/// `throttle.frequency_cap` on the built `herald run`: two campaigns of one category sending to
/// one audience at the same time, `max: 1 per 24h`: no device gets two pushes (the simulators'
/// logs are the truth), and every device gets one.
@Suite(.serialized) struct FrequencyCapRunTests {
    let dir = TemporaryDirectory("e2e-caps")
    static let count = 2_000

    let herald = Herald()

    /// One of the category's campaigns, all reading data/audience.csv and sharing the state directory.
    func job(_ name: String, overCap: String = "skip") throws -> JobFile {
        try TestJob(name) {
            $0.audience.files = ["../data/audience.csv"]
            $0.apns.streamsPerConnection = 20
            $0.apns.simulator.latencyMs = 2
            $0.push.template = "{ aps: { alert: \"\(name)\" } }"
            $0.throttle.frequencyCap = "{ category: marketing, limits: [{ max: 1, per: 24h }], over_cap: \(overCap) }"
            $0.state.file = "../state/\(name).sqlite"
        }.write(in: dir)
    }

    func tokens(in log: String) throws -> [String] {
        let path = dir.file("out/\(log).ndjson")
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { line in
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return o["token"] as! String
        }
    }

    @Test func twoCampaignsAtOnceNeverBothReachADevice() throws {
        try dir.write("data/audience.csv", "token\n" + (1...Self.count).map { String(format: "%064x", $0) }.joined(separator: "\n") + "\n")
        let a = try job("spring-sale"), b = try job("weekly-news")
        // The overlap is made certain: the first run holds right after its first batch took its
        // slots (before those pushes leave) while the second runs whole, then goes on.
        let env: [String: String?] = ["HERALD_TEST_STALL_AT": "ledger:1", "HERALD_TEST_RELEASE_FILE": dir.file("release-spring-sale")]
        let first = try herald.start(["run", a.path], watch: .stderr, environment: env)
        _ = try first.waitForLine(containing: "herald-test: held at ledger:1")
        let second = try herald.run(b)
        try dir.write("release-spring-sale", "")
        first.process.waitUntilExit()
        #expect(first.process.terminationStatus == 0 && second.status == 0, "\(second.stdout)\(second.stderr)")
        let sentA = try tokens(in: "spring-sale"), sentB = try tokens(in: "weekly-news")
        #expect(!sentA.isEmpty && !sentB.isEmpty, "both ran at the same time: \(sentA.count) and \(sentB.count)")
        #expect(Set(sentA).isDisjoint(with: sentB), "no device got two pushes")
        #expect(sentA.count + sentB.count == Self.count && Set(sentA + sentB).count == Self.count, "every device got one")

        let summaryA = try JSON.object(dir.file("reports/spring-sale/summary.json"))
        let reasons = try #require(summaryA["by_reason"] as? [String: Int])
        #expect(reasons["frequency_cap"] == Self.count - sentA.count, "\(reasons)")
        #expect((summaryA["reason_actions"] as? [String: String])?["frequency_cap"] == "not_sent")

        // A third campaign of the category the same day: nobody has room; with `defer` it waits (exit 4).
        let c = try job("flash", overCap: "defer")
        let r = try herald.run(c)
        #expect(r.status == 4, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("\(Self.count) recipient(s) wait for a frequency-cap slot; the next are due at "), "\(r.stderr)")
        #expect(try tokens(in: "flash").isEmpty)
        let status = try herald(["status", c.path])
        #expect(status.stdout.contains("waiting   2,000 for a frequency-cap slot; the next due at "), "not their local window: \(status.stdout)")
        let preview = try herald(["preview", c.path, "-n", "1"])
        #expect(preview.stdout.contains("capped: 1 push in the last 24h (deferred)"), "\(preview.stdout)")
    }

    /// Background pushes of a capped category count under both budgets of the one ledger: a push
    /// the silent-push budget holds back takes no frequency-cap slot, and `herald preview` shows both.
    @Test func theSilentBudgetAndACapShareOneLedger() throws {
        func sync(_ name: String) throws -> JobFile {
            try TestJob(name, tokens: HeraldTestSupport.tokens(1...20)) {
                $0.push.type = "background"
                $0.push.template = "{ aps: { content-available: 1 } }"
                $0.throttle.silentPerDevicePerHour = 1
                $0.throttle.frequencyCap = "{ category: sync, limits: [{ max: 2, per: 24h }] }"
                $0.state.file = "../state/ledger-\(name).sqlite"
            }.write(in: dir)
        }
        let first = try sync("sync-a")
        #expect(try herald.run(first).status == 0)
        #expect(try tokens(in: "sync-a").count == 20)

        let second = try sync("sync-b")
        let preview = try herald(["preview", second.path, "-n", "1"])
        #expect(preview.stdout.contains("over the silent-push budget: 1 push in the last 1h (skipped)"), "\(preview.stdout)")
        #expect(preview.stdout.contains("frequency cap sync: room"), "\(preview.stdout)")
        let r = try herald.run(second)
        #expect(r.status == 0, "\(r.output)")
        #expect(try tokens(in: "sync-b").isEmpty)
        #expect((try second.summary()["by_reason"] as? [String: Int])?["silent_budget"] == 20)
        // Held by the silent budget, the second campaign took no cap slot: one push each so far, not two.
        let third = try sync("sync-c")
        let after = try herald(["preview", third.path, "-n", "1"])
        #expect(after.stdout.contains("frequency cap sync: room"), "\(after.stdout)")
    }
}
