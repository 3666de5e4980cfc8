import Foundation
import HeraldTestSupport
import Testing

/// Background pushes, the silent-push budget across campaigns sharing a state directory, and
/// `throttle.deadline`, on the built binary against the in-process simulator (TLS + HTTP/2) with
/// real state files and a real herald-shared.sqlite.
@Suite struct ThrottleCommandTests {
    let dir = TemporaryDirectory("e2e-throttle")

    static func token(_ i: Int) -> String { String(format: "%064x", i) }

    /// A job in `<area>/jobs/<name>.yaml`; every job of one area shares `<area>/state/`.
    let herald = Herald()

    /// A job in `<area>/jobs/<name>.yaml`; every job of one area shares `<area>/state/`.
    func job(_ area: String, _ name: String, tokens: [Int], type: String = "background",
             _ configure: (inout TestJob) -> Void = { _ in }) throws -> String {
        try dir.write("\(area)/data/\(name).csv", (["token"] + tokens.map(Self.token)).joined(separator: "\n") + "\n")
        let job = TestJob(name) {
            $0.audience.files = ["../data/\(name).csv"]
            $0.apns.streamsPerConnection = 20
            $0.push.type = type
            $0.push.template = type == "background" ? "{ aps: { content-available: 1 }, sync: inbox }" : "{ aps: { alert: hello } }"
            configure(&$0)
        }
        return try dir.write("\(area)/jobs/\(name).yaml", job.yaml)
    }

    func run(_ job: String, _ args: [String] = [], env: [String: String?] = [:]) throws -> RunResult {
        try herald(["run", job] + args, environment: env)
    }

    /// The simulator's log: per token, each request's headers and arrival time.
    struct Sent { var headers: [String: String]; var timeMs: Double; var body: String }
    func sent(_ area: String, _ name: String) throws -> [String: [Sent]] {
        let path = dir.file("\(area)/out/\(name).ndjson")
        guard FileManager.default.fileExists(atPath: path) else { return [:] }
        var out: [String: [Sent]] = [:]
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            out[o["token"] as? String ?? "", default: []].append(
                Sent(headers: o["headers"] as? [String: String] ?? [:], timeMs: o["time_ms"] as? Double ?? 0, body: o["body"] as? String ?? ""))
        }
        return out
    }

    /// deliveries.csv as token → (status, reason, attempts).
    func deliveries(_ area: String, _ name: String) throws -> [String: (status: String, reason: String, attempts: String)] {
        let text = try String(contentsOfFile: dir.file("\(area)/reports/\(name)/deliveries.csv"), encoding: .utf8)
        var out: [String: (String, String, String)] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let f = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            out[f[3]] = (f[4], f[6], f[8])
        }
        return out
    }

    func summary(_ area: String, _ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: dir.file("\(area)/reports/\(name)/summary.json")))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    func counts(_ area: String, _ name: String) throws -> [String: Int] {
        try #require(try summary(area, name)["counts"] as? [String: Int])
    }

    @Test func aBackgroundPushIsSentEndToEnd() throws {
        let path = try job("bg", "sync", tokens: Array(1...3))
        let r = try run(path)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let log = try sent("bg", "sync")
        #expect(log.count == 3 && log.values.allSatisfy { $0.count == 1 })
        let first = try #require(log[Self.token(1)]?.first)
        #expect(first.headers["apns-push-type"] == "background" && first.headers["apns-priority"] == "5")
        #expect(first.headers["apns-topic"] == "com.example.app")
        #expect(first.body == #"{"aps":{"content-available":1},"sync":"inbox"}"#)
        #expect(try counts("bg", "sync")["sent"] == 3)
    }

    /// Campaign A sends two background pushes to tokens 1…3 (a run and a `--new-run`); B and C,
    /// other campaigns in the same state directory, then find those devices over budget.
    @Test func theSilentBudgetHoldsAcrossCampaignsWithSkipAndDefer() throws {
        let a = try job("budget", "a", tokens: Array(1...3))
        #expect(try run(a).status == 0)
        let again = try run(a, ["--new-run"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try sent("budget", "a").values.allSatisfy { $0.count == 2 }, "two background pushes per device: the budget")

        // skip (the default): final status throttled; token 4 has budget left and is sent.
        let b = try job("budget", "b", tokens: Array(1...4))
        let rb = try run(b)
        #expect(rb.status == 0, "\(rb.stdout)\(rb.stderr)")
        #expect(Set(try sent("budget", "b").keys) == [Self.token(4)], "nothing sent to a device over budget")
        let db = try deliveries("budget", "b")
        #expect(db[Self.token(1)]?.status == "throttled" && db[Self.token(1)]?.reason == "silent_budget" && db[Self.token(1)]?.attempts == "0")
        #expect(db[Self.token(4)]?.status == "sent")
        #expect(try counts("budget", "b")["throttled"] == 3)
        #expect(try (summary("budget", "b")["by_reason"] as? [String: Int])?["silent_budget"] == 3)
        #expect(try (summary("budget", "b")["reason_actions"] as? [String: String])?["silent_budget"] == "not_sent")
        #expect(rb.stdout.contains("3 throttled"), "\(rb.stdout)")

        // defer: pending, the run says why and exits 4; a rerun inside the window still sends nothing.
        let c = try job("budget", "c", tokens: Array(1...3)) { $0.throttle.silentOverBudget = "defer" }
        for attempt in 1...2 {
            let rc = try run(c)
            #expect(rc.status == 4, "attempt \(attempt): \(rc.stdout)\(rc.stderr)")
            #expect(rc.stderr.contains("3 background push(es) deferred by the silent-push budget"), "\(rc.stderr)")
            #expect(try sent("budget", "c").isEmpty)
            let dc = try deliveries("budget", "c")
            #expect(dc.values.allSatisfy { $0.status == "pending" && $0.reason == "silent_budget" && $0.attempts == "0" })
            #expect(try counts("budget", "c")["pending"] == 3)
        }
        // A budget of 3 has room: the same deferred campaign with a larger budget goes out.
        _ = try job("budget", "c", tokens: Array(1...3)) { $0.throttle.silentOverBudget = "defer"; $0.throttle.silentPerDevicePerHour = 3 }
        let rc = try run(c)
        #expect(rc.status == 0, "\(rc.stdout)\(rc.stderr)")
        #expect(try sent("budget", "c").values.map(\.count).sorted() == [1, 1, 1])
    }

    /// With the window shortened for the test (`HERALD_TEST_SILENT_WINDOW`, seconds), a deferred
    /// push goes out on a run after its window opens, and only then.
    @Test func aDeferredPushIsSentByALaterRunAfterItsWindow() throws {
        let window = 10.0
        let env: [String: String?] = ["HERALD_TEST_SILENT_WINDOW": String(Int(window))]
        let a = try job("window", "a", tokens: [7])
        #expect(try run(a, env: env).status == 0)
        #expect(try run(a, ["--new-run"], env: env).status == 0)
        let d = try job("window", "d", tokens: [7, 8]) { $0.throttle.silentOverBudget = "defer" }
        let first = try run(d, env: env)
        #expect(first.status == 4, "\(first.stdout)\(first.stderr)")
        #expect(Set(try sent("window", "d").keys) == [Self.token(8)])

        // Wait (no timing is asserted) until the first of A's two pushes has left the window.
        let firstPush = try #require(try sent("window", "a")[Self.token(7)]?.map(\.timeMs).min())
        // A real deadline, by design (herald reads the wall clock): bounded by the window.
        let opens = firstPush / 1000 + window + 1
        try #require(opens - Date().timeIntervalSince1970 <= window + 1, "the first push is not in the future")
        while Date().timeIntervalSince1970 < opens { usleep(200_000) }
        let later = try run(d, env: env)
        #expect(later.status == 0, "\(later.stdout)\(later.stderr)")
        #expect(try sent("window", "d")[Self.token(7)]?.count == 1)
        #expect(try deliveries("window", "d")[Self.token(7)]?.status == "sent")
    }

    /// Two campaigns started together, sharing 300 devices and a budget of one push per device:
    /// every device gets exactly one push from the two of them.
    @Test func concurrentCampaignsShareTheBudget() throws {
        let jobs = try ["x", "y"].map { try job("race", $0, tokens: Array(1...300)) { $0.throttle.silentPerDevicePerHour = 1; $0.throttle.silentRate = 300 } }
        let procs = try jobs.map { try herald.start(["run", $0]) }
        for p in procs { p.process.waitUntilExit(); #expect(p.process.terminationStatus == 0) }
        let x = try sent("race", "x"), y = try sent("race", "y")
        for i in 1...300 {
            #expect((x[Self.token(i)]?.count ?? 0) + (y[Self.token(i)]?.count ?? 0) == 1, "token \(i)")
        }
        #expect(try counts("race", "x")["throttled"]! + counts("race", "y")["throttled"]! == 300)
    }

    /// kill -9 after the ledger commit and before the pushes leave: the slots stay reserved
    /// (another campaign is refused), and the rerun resends with the same apns-ids on those slots.
    @Test func aCrashBetweenTheLedgerAndTheSendLeavesAReservedSlotNeverAnUnrecordedPush() throws {
        let a = try job("crash", "a", tokens: Array(1...5)) { $0.throttle.silentPerDevicePerHour = 1 }
        let stalled = try herald.start(["run", a], watch: .stderr, environment: ["HERALD_TEST_STALL_AT": "ledger:1"])
        _ = try stalled.waitForLine(prefix: "herald-test: stalled")
        stalled.kill9()
        #expect(try sent("crash", "a").isEmpty, "nothing left before the kill")
        let b = try job("crash", "b", tokens: Array(1...5)) { $0.throttle.silentPerDevicePerHour = 1 }
        #expect(try run(b).status == 0)
        #expect(try sent("crash", "b").isEmpty && counts("crash", "b")["throttled"] == 5, "the reserved slots count")
        let rerun = try run(a)
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        #expect(try sent("crash", "a").values.map(\.count) == [1, 1, 1, 1, 1], "same notification, same slot")
    }

    /// The deadline stops new sends, leaves the rest pending (exit 4) and sets apns-expiration;
    /// the next run (its own window) goes on without sending anyone twice.
    @Test func theDeadlineLeavesRecipientsPendingWithExit4AndSetsExpiration() throws {
        let path = try job("deadline", "late", tokens: Array(1...200), type: "alert") { $0.throttle.rate = 40; $0.throttle.deadline = "2s" }
        let started = Date().timeIntervalSince1970
        let r = try run(path)
        #expect(r.status == 4, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("throttle.deadline"), "\(r.stderr)")
        let log = try sent("deadline", "late")
        let c = try counts("deadline", "late")
        #expect(log.count == c["sent"] && c["sent"]! > 0 && c["sent"]! < 200, "\(c)")
        #expect(c["pending"] == 200 - c["sent"]!)
        let untouched = try deliveries("deadline", "late").values.filter { $0.status == "pending" }
        #expect(untouched.allSatisfy { $0.attempts == "0" }, "never attempted")
        let expirations = Set(log.values.flatMap { $0 }.compactMap { $0.headers["apns-expiration"].flatMap(Double.init) })
        #expect(expirations.count == 1, "one deadline, one expiration")
        #expect(expirations.allSatisfy { $0 >= started.rounded(.down) + 2 && $0 <= Date().timeIntervalSince1970 + 1 }, "\(expirations)")

        let next = try run(path)
        #expect([0, 4].contains(next.status), "\(next.stderr)")
        let after = try sent("deadline", "late")
        #expect(after.count > log.count && after.values.allSatisfy { $0.count == 1 }, "progress, nobody twice")
    }
}
