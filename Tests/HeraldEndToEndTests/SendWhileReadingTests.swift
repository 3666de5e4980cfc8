import Foundation
import HeraldTestSupport
import Testing

/// `audience.prescan: false` on the built binary: pushes leave while the audience is still being
/// read, duplicates across files and spellings are still sent once, a kill while reading and
/// sending resumes with nobody skipped or sent twice (beyond the in-flight window), and a bad
/// audience found late stops the run with everything already sent recorded.
@Suite(.serialized) struct SendWhileReadingTests {
    let dir = TemporaryDirectory("e2e-stream")
    static let count = TwoFileAudience.count
    static let window = CrashResumeTests.window

    func writeAudience() throws { try TwoFileAudience.write(in: dir) }

    let herald = Herald()

    /// The kill tests' job (TwoFileAudience), read while sending unless `prescan`.
    func writeJob(name: String, prescan: Bool = false, _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TwoFileAudience.job(name) { $0.audience.prescan = prescan; configure(&$0) }.write(in: dir)
    }

    /// The request log's line count once it has `count` lines or `process` has exited. How long
    /// that takes is no part of the test (a sanitizer build sends several times slower): only a
    /// log that stops growing for a minute while the process runs ends the wait short.
    static func lines(_ count: Int, in log: String, while process: Process) -> Int {
        var seen = RequestLog.lineCount(log)
        var grew = Date()
        while seen < count, process.isRunning, Date().timeIntervalSince(grew) < 60 {
            Thread.sleep(forTimeInterval: 0.05)
            let now = RequestLog.lineCount(log)
            if now > seen { seen = now; grew = Date() }
        }
        return max(seen, RequestLog.lineCount(log))
    }

    func summaryCounts(_ name: String) throws -> [String: Any] {
        try #require(try JSON.object(dir.file("reports/\(name)/summary.json"))["counts"] as? [String: Any])
    }

    @Test func pushesLeaveWhileTheReaderIsStalledAndAKilledRunResumesEveryoneOnce() throws {
        try writeAudience()
        let job = try writeJob(name: "stream-kill")
        let log = dir.file("out/stream-kill.ndjson")

        // The reader stops for good after its 4th batch (4,096 rows); the sender goes on with what is recorded.
        let p = try herald.start(["run", job.path], watch: .stderr, environment: ["HERALD_TEST_STALL_AT": "ingest:4"])
        _ = try p.waitForLine(prefix: "herald-test: stalled at")
        let seen = Self.lines(2_000, in: log, while: p.process)
        #expect(seen >= 2_000, "pushes leave before the audience is read (\(seen) answered while the reader is stalled)")
        // The sender runs out of recorded recipients once the 4,096 of the four batches are answered.
        let stalledAt = Self.lines(4 * 1_024, in: log, while: p.process)
        #expect(stalledAt <= 4 * 1_024, "only recorded recipients are sent (\(stalledAt))")
        #expect(stalledAt == 4 * 1_024, "every recorded recipient is sent while the reader is stalled (\(stalledAt))")
        p.kill9()

        // Killed again mid-send, further on.
        let q = try herald.start(["run", job.path])
        let later = Self.lines(12_000, in: log, while: q.process)
        q.kill9()
        #expect(later >= 12_000 && later < Self.count + Self.window, "\(later)")

        let rerun = try herald.run(job)
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        try expectEveryoneOnce(try RequestLog.read(log), allowedResends: 2 * Self.window)
        let counts = try summaryCounts("stream-kill")
        #expect(counts["sent"] as? Int == Self.count && counts["duplicates"] as? Int == 500 && counts["pending"] as? Int == 0)
        #expect(counts["rows"] as? Int == 12_000 + 8_500)
    }

    /// A run started reading first (`prescan: true`), killed while reading, and resumed with
    /// `prescan: false`: the rows it staged become recipients, their duplicates are found, and the
    /// rest is read while sending.
    @Test func aRunStartedReadingFirstResumesSendingWhileReading() throws {
        try writeAudience()
        _ = try writeJob(name: "mixed", prescan: true)
        let p = try herald.start(["run", dir.file("jobs/mixed.yaml")], watch: .stderr, environment: ["HERALD_TEST_STALL_AT": "ingest:2"])
        _ = try p.waitForLine(prefix: "herald-test: stalled at")
        p.kill9()
        #expect(RequestLog.lineCount(dir.file("out/mixed.ndjson")) == 0)
        let job = try writeJob(name: "mixed", prescan: false)
        let rerun = try herald.run(job)
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        try expectEveryoneOnce(try RequestLog.read(dir.file("out/mixed.ndjson")), allowedResends: 0)
        let counts = try summaryCounts("mixed")
        #expect(counts["sent"] as? Int == Self.count && counts["duplicates"] as? Int == 500)
    }

    /// One token spelled three ways in one file (a batch) and again in an NDJSON file: sent once.
    @Test func spellingsOfOneTokenInOneBatchAndAcrossFormatsAreSentOnce() throws {
        let hex = String(repeating: "ab12", count: 16)
        let bracketed = "<" + stride(from: 0, to: 64, by: 8).map { i in
            String(hex.uppercased()[hex.index(hex.startIndex, offsetBy: i)..<hex.index(hex.startIndex, offsetBy: i + 8)])
        }.joined(separator: " ") + ">"
        try dir.write("data/one.csv", "token,first_name\n\(hex),A\n\"\(bracketed)\",B\n\(hex.uppercased()),C\n\(String(format: "%064x", 7)),D\n")
        try dir.write("data/two.ndjson", "{\"token\":\"\(hex)\",\"first_name\":\"E\"}\n{\"token\":\"\(String(format: "%064x", 8))\",\"first_name\":\"F\"}\n")
        let job = try writeJob(name: "spell") { $0.audience.files = ["../data/one.csv", "../data/two.ndjson"]; $0.apns.streamsPerConnection = 10 }
        let r = try herald.run(job)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let log = try RequestLog.read(dir.file("out/spell.ndjson"))
        #expect(log.count == 3 && log[hex]?.count == 1, "\(log.keys.sorted())")
        let counts = try summaryCounts("spell")
        #expect(counts["duplicates"] as? Int == 3 && counts["distinct"] as? Int == 3)
        // The first row of the token wins: its payload was rendered from row 2 ("A").
        let rows = try ReportCheck.csv(dir.file("reports/spell/deliveries.csv"))
        #expect(rows.first { $0["token"] == hex }?["line"] == "2")
    }

    /// Invalid rows late in the audience: past `max_invalid_rows` (a count) the run stops with exit 5
    /// after some pushes went out, every answer recorded; raising the limit and rerunning finishes
    /// the same run without sending anyone twice.
    @Test func tooManyInvalidRowsFoundWhileSendingStopWithExit5AndTheRerunFinishes() throws {
        var rows = ["token,first_name"]
        for i in 1...12_000 { rows.append(String(format: "%064x,N%d", i, i)) }
        for i in 1...60 { rows.append("not-a-token-\(i),X") }
        for i in 12_001...13_000 { rows.append(String(format: "%064x,N%d", i, i)) }
        try dir.writeGzip("data/late.csv.gz", rows.joined(separator: "\n") + "\n")
        let job = try writeJob(name: "late") { $0.audience.files = ["../data/late.csv.gz"]; $0.audience.maxInvalidRows = "50" }
        let r = try herald.run(job)
        #expect(r.status == 5, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("max_invalid_rows") && r.stderr.contains("what was sent is recorded"), "\(r.stderr)")
        let log = dir.file("out/late.ndjson")
        let sentBefore = RequestLog.lineCount(log)
        #expect(sentBefore > 0 && sentBefore <= 12_000, "some pushes left before the bad rows were read (\(sentBefore))")
        let partial = try summaryCounts("late")
        #expect(partial["sent"] as? Int == sentBefore, "every answer received is recorded")
        #expect(try JSON.object(dir.file("reports/late/summary.json"))["exit_code"] as? Int == 5)
        let invalid = try ReportCheck.csv(dir.file("reports/late/invalid.csv"))
        #expect(invalid.count >= 51 && invalid.allSatisfy { $0["reason"] == "invalid_token" })

        _ = try writeJob(name: "late") { $0.audience.files = ["../data/late.csv.gz"]; $0.audience.maxInvalidRows = "100" }
        let rerun = try herald.run(job)
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        let byToken = try RequestLog.read(log)
        #expect(byToken.count == 13_000 && byToken.values.allSatisfy { $0.count == 1 }, "each valid token sent once")
        #expect(try ReportCheck.csv(dir.file("reports/late/invalid.csv")).count == 60)
    }

    /// A truncated gzip found while sending: exit 2 naming the file and the byte offset; what was
    /// sent until then is recorded and reported.
    @Test func aTruncatedSecondFileStopsTheRunWithExit2AfterTheFirstFileWasSent() throws {
        try writeAudience()
        let whole = try #require(FileManager.default.contents(atPath: dir.file("data/b.csv.gz")))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: dir.file("data/b.csv.gz")))
        let job = try writeJob(name: "cut")
        let r = try herald.run(job)
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("b.csv.gz: gzip stream truncated at byte"), "\(r.stderr)")
        let counts = try summaryCounts("cut")
        #expect(counts["sent"] as? Int == RequestLog.lineCount(dir.file("out/cut.ndjson")), "every answer received is recorded")
        #expect((counts["distinct"] as? Int ?? 0) >= 12_000, "the first file's recipients are recorded")
    }

    func expectEveryoneOnce(_ byToken: [String: [RequestLog.Attempt]], allowedResends: Int) throws {
        TwoFileAudience.expectEveryoneOnce(byToken, allowedResends: allowedResends)
    }
}
