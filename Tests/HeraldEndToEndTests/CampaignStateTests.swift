import Foundation
import HeraldTestSupport
import Testing

/// Locks, dedup across files, changed audiences, recurring campaigns and `herald status`, on the
/// built binary against the in-process simulator.
@Suite(.serialized) struct CampaignStateTests {
    let dir = TemporaryDirectory("e2e-state")

    let herald = Herald()

    /// A job reading `files` in data/.
    func job(_ name: String, files: [String], _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TestJob(name) {
            $0.audience.files = files.map { "../data/" + $0 }
            $0.apns.streamsPerConnection = 20
            configure(&$0)
        }.write(in: dir)
    }

    @Test func aSecondConcurrentRunExits75WithoutTouchingStateAndTheFirstIsUnaffected() throws {
        try dir.writeGzip("data/lock.csv.gz", (["token"] + tokens(1...1_500)).joined(separator: "\n") + "\n")
        // A rate limit keeps the first run busy for a few seconds.
        let path = try job("lock", files: ["lock.csv.gz"]) { $0.throttle.rate = 400 }
        let log = dir.file("out/lock.ndjson")
        let first = try herald.start(["run", path.path])
        _ = RequestLog.wait(for: 100, in: log) { first.process.isRunning }
        #expect(first.process.isRunning)
        let second = try herald.run(path)
        #expect(second.status == 75, "\(second.stdout)\(second.stderr)")
        #expect(second.stderr.contains("another herald run holds the lock"), "\(second.stderr)")
        #expect(second.stdout.isEmpty, "no summary: the second run did nothing")

        let status = try herald(["status", path.path, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let s = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(s["running"] as? Bool == true && s["lock_holder_pid"] as? Int == Int(first.pid), "\(status.stdout)")

        first.process.waitUntilExit()
        #expect(first.process.terminationStatus == 0, "the first run is unaffected")
        let byToken = try RequestLog.read(log)
        #expect(byToken.count == 1_500 && byToken.values.allSatisfy { $0.count == 1 })
        let done = try herald(["status", path.path])
        #expect(done.stdout.contains("lock      free") && done.stdout.contains("1,500 sent"), "\(done.stdout)")
    }

    @Test func aRefusedRunWritesNothing() throws {
        try dir.writeGzip("data/frozen.csv.gz", (["token"] + tokens(1...300)).joined(separator: "\n") + "\n")
        let path = try job("frozen", files: ["frozen.csv.gz"])
        // The first run stops (frozen, lock held) right after its first batch of answers is committed.
        let first = try herald.start(["run", path.path], watch: .stderr,
                                          environment: ["HERALD_TEST_STALL_AT": "send:1"])
        _ = try first.waitForLine(prefix: "herald-test: stalled")
        let files = ["state/frozen.sqlite", "state/frozen.sqlite-wal"].map { dir.file($0) }
        let before = try files.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        let second = try herald.run(path)
        #expect(second.status == 75, "\(second.stderr)")
        let after = try files.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        #expect(before == after, "the refused run did not touch the state file")
        first.kill9()
        // The kernel released the dead holder's lock: the rerun proceeds and finishes.
        let rerun = try herald.run(path)
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        let byToken = try RequestLog.read(dir.file("out/frozen.ndjson"))
        // The frozen run's committed answers are not sent again; only what was on the wire or
        // answered but not yet committed when it was killed (at most 2 × connections × streams,
        // here 40) is resent, with its first apns-id.
        let resent = byToken.filter { $0.value.count > 1 }
        #expect(byToken.count == 300 && resent.count <= 40, "\(resent.count) resent")
        #expect(resent.allSatisfy { Set($0.value.map(\.apnsId)).count == 1 })
    }

    @Test func theSameTokenSpelledDifferentlyInTwoFilesIsSentOnce() throws {
        let t = tokens(1...3)
        // Old iOS descriptions: "<abcd ef01 …>", upper case; and the same tokens in NDJSON.
        func spaced(_ hex: String) -> String {
            "<" + stride(from: 0, to: hex.count, by: 8).map { i -> String in
                let s = hex.index(hex.startIndex, offsetBy: i)
                return String(hex[s..<hex.index(s, offsetBy: 8)]).uppercased()
            }.joined(separator: " ") + ">"
        }
        _ = try dir.write("data/one.csv", "token\n\"\(spaced(t[0]))\"\n\(t[1].uppercased())\n\(t[2])\n")
        try dir.writeGzip("data/two.ndjson.gz", t.map { "{\"token\":\"\($0)\"}" }.joined(separator: "\n") + "\n")
        let path = try job("spell", files: ["one.csv", "two.ndjson.gz"])
        let r = try herald.run(path)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let byToken = try RequestLog.read(dir.file("out/spell.ndjson"))
        #expect(Set(byToken.keys) == Set(t) && byToken.values.allSatisfy { $0.count == 1 })
        let counts = try #require(try JSON.object(dir.file("reports/spell/summary.json"))["counts"] as? [String: Any])
        #expect(counts["rows"] as? Int == 6 && counts["distinct"] as? Int == 3 && counts["duplicates"] as? Int == 3)
    }

    @Test func aChangedAudienceIsSaidAndContinuedByTokenIdentity() throws {
        try dir.writeGzip("data/change.csv.gz", (["token"] + tokens(1...3_000)).joined(separator: "\n") + "\n")
        let path = try job("change", files: ["change.csv.gz"]) { $0.throttle.rate = 500 }
        let log = dir.file("out/change.ndjson")
        let first = try herald.start(["run", path.path])
        _ = RequestLog.wait(for: 500, in: log) { first.process.isRunning }
        kill(first.pid, SIGTERM)
        first.process.waitUntilExit()
        #expect(first.process.terminationStatus == 4)
        let sentBefore = Set(try RequestLog.read(log).keys)
        #expect(sentBefore.count >= 500 && sentBefore.count < 3_000)

        // The operator edits the file: the last 1,000 recipients go, 200 new ones come.
        try dir.writeGzip("data/change.csv.gz", (["token"] + tokens(1...2_000) + tokens(5_001...5_200)).joined(separator: "\n") + "\n")
        let rerun = try herald.run(path)
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        #expect(rerun.stderr.contains("audience changed") && rerun.stderr.contains("change.csv.gz"), "\(rerun.stderr)")

        let byToken = try RequestLog.read(log)
        #expect(byToken.values.allSatisfy { $0.count == 1 }, "nobody sent twice")
        let expected = Set(tokens(1...2_000) + tokens(5_001...5_200)).union(sentBefore)
        #expect(Set(byToken.keys) == expected, "kept and new recipients sent; vanished ones sent only if already sent before the change")
        let summary = try JSON.object(dir.file("reports/change/summary.json"))
        #expect(summary["audience_changed"] as? Bool == true)
        #expect(summary["new_recipients"] as? Int == 200)
        #expect(summary["vanished_recipients"] as? Int == 1_000)
        let counts = try #require(summary["counts"] as? [String: Any])
        let vanishedUnsent = 1_000 - sentBefore.filter { Int($0, radix: 16)! > 2_000 }.count
        #expect(counts["suppressed"] as? Int == vanishedUnsent)
    }

    @Test func aRecurringCampaignRunsOncePerPeriodAndNewRunSendsAgain() throws {
        _ = try dir.write("data/daily.csv", (["token"] + tokens(1...5)).joined(separator: "\n") + "\n")
        let path = try job("daily", files: ["daily.csv"]) { $0.campaign = "daily-{date}" }
        let log = dir.file("out/daily.ndjson")
        let first = try herald.run(path)
        #expect(first.status == 0, "\(first.stderr)")
        let f = DateFormatter()
        f.dateFormat = "yyyy-MM-dd"
        f.timeZone = TimeZone(identifier: "UTC")
        let today = "daily-" + f.string(from: Date())
        #expect(FileManager.default.fileExists(atPath: dir.file("reports/\(today)/summary.json")), "\(first.stdout)")
        #expect(FileManager.default.fileExists(atPath: dir.file("state/daily-{date}.sqlite")))

        let again = try herald.run(path)
        #expect(again.status == 0 && again.stdout.contains("already finished"), "\(again.stdout)")
        #expect(RequestLog.lineCount(log) == 5)

        let newRun = try herald.run(path, ["--new-run"])
        #expect(newRun.status == 0, "\(newRun.stderr)")
        let byToken = try RequestLog.read(log)
        #expect(byToken.values.allSatisfy { $0.count == 2 })
        #expect(byToken.values.allSatisfy { Set($0.map(\.apnsId)).count == 2 }, "a new run is a new notification: new apns-id")
        let status = try herald(["status", path.path, "--json"])
        let s = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect((s["runs"] as? [[String: Any]])?.count == 2 && s["running"] as? Bool == false)
    }

    @Test func tooManyInvalidRowsStopBeforeTheFirstPushWithExit5() throws {
        _ = try dir.write("data/bad.csv", (["token"] + tokens(1...7) + ["nothex", "abc", "<zz>"]).joined(separator: "\n") + "\n")
        // The job's audience section has a limit of 2 invalid rows.
        let path = try job("bad", files: ["bad.csv"]) { $0.audience.maxInvalidRows = "2" }
        let r = try herald.run(path)
        #expect(r.status == 5, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("3 of 10 audience rows are invalid"), "\(r.stderr)")
        #expect(RequestLog.lineCount(dir.file("out/bad.ndjson")) == 0, "nothing sent")
        let invalid = try String(contentsOfFile: dir.file("reports/bad/invalid.csv"), encoding: .utf8)
        #expect(invalid.split(separator: "\n").count == 4, "header + the 3 invalid rows, recorded")
        // Raising the limit lets the same run go on.
        _ = try job("bad", files: ["bad.csv"]) { $0.audience.maxInvalidRows = "30%" }
        let again = try herald.run(path)
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        #expect(RequestLog.lineCount(dir.file("out/bad.ndjson")) == 7)
    }

    @Test func statusOfACampaignThatNeverRan() throws {
        _ = try dir.write("data/never.csv", "token\n" + tokens(1...1)[0] + "\n")
        let path = try job("never", files: ["never.csv"])
        let r = try herald(["status", path.path])
        #expect(r.status == 0 && r.stdout.contains("never run"), "\(r.stdout + r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("state/never.sqlite")), "status creates nothing")
    }
}
