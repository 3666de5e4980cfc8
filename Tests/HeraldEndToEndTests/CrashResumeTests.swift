import Foundation
import HeraldTestSupport
import Testing

/// The product's promise, tested by really killing the built `herald run`: a campaign killed at
/// any point (reading the audience, sending, writing reports) and rerun with the same command
/// until it exits 0 sends every valid distinct token exactly one 200, except at most the in-flight
/// window of resends, each carrying the apns-id and collapse id of its earlier attempt.
@Suite(.serialized) struct CrashResumeTests {
    let dir = TemporaryDirectory("e2e-kill")
    static let count = TwoFileAudience.count
    /// 2 connections × 100 streams, twice: the requests on the wire plus those claimed ahead or
    /// answered and not yet committed (the streaming sender's bound, `SendLoop`).
    static let window = 400

    func writeAudience() throws { try TwoFileAudience.write(in: dir) }

    let herald = Herald()

    func writeJob(name: String) throws -> JobFile { try TwoFileAudience.job(name).write(in: dir) }

    /// Starts `herald run`, waits for `HERALD_TEST_STALL_AT`'s point, and SIGKILLs it there.
    func killAt(_ point: String, job: JobFile) throws {
        let p = try herald.start(["run", job.path], watch: .stderr, environment: ["HERALD_TEST_STALL_AT": point])
        let line = try p.waitForLine(prefix: "herald-test: stalled at")
        #expect(line == "herald-test: stalled at \(point)")
        p.kill9()
        #expect(p.process.terminationReason == .uncaughtSignal)
    }

    /// Starts `herald run` and signals it once the simulator has answered `after` requests.
    func signalMidSend(_ sig: Int32, job: JobFile, after: Int) throws -> (BackgroundProcess, Int) {
        let p = try herald.start(["run", job.path])
        let seen = RequestLog.wait(for: after, in: job.requestLog) { p.process.isRunning }
        kill(p.pid, sig)
        p.process.waitUntilExit()
        return (p, seen)
    }

    @Test
    func sigkillWhileReadingSendingAndReportingThenRerunsSendEveryoneOnce() throws {
        try writeAudience()
        let name = "kill-all-"
        let job = try writeJob(name: name)
        let log = dir.file("out/\(name).ndjson")

        // 1. Killed while reading the audience: nothing has been sent yet.
        try killAt("ingest:3", job: job)
        #expect(RequestLog.lineCount(log) == 0, "nothing leaves before the whole audience is recorded")

        // 2. Killed mid-send, with requests in flight.
        let (_, seen) = try signalMidSend(SIGKILL, job: job, after: 4_000)
        #expect(seen >= 4_000 && seen < Self.count, "killed mid-send (\(seen) answered)")

        // 3. Killed while writing the reports (deliveries.csv written, invalid.csv and summary.json not).
        try killAt("report:1", job: job)
        let reports = dir.file("reports/\(name)")
        #expect(FileManager.default.fileExists(atPath: reports + "/deliveries.csv"))
        #expect(!FileManager.default.fileExists(atPath: reports + "/summary.json"))

        // 4. Rerun: everything was sent; the missing reports are written and nothing is sent.
        let before = RequestLog.lineCount(log)
        let rerun = try herald.run(job)
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        #expect(rerun.stdout.contains("already finished") && rerun.stdout.contains("regenerated"), "\(rerun.stdout)")
        #expect(RequestLog.lineCount(log) == before)
        let again = try herald.run(job)
        #expect(again.status == 0 && again.stdout.contains("reports are complete"), "\(again.stdout)")

        let byToken = try RequestLog.read(log)
        try expectEveryoneOnce(byToken, allowedResends: Self.window)
        let summary = try JSON.object(reports + "/summary.json")
        let counts = try #require(summary["counts"] as? [String: Any])
        #expect(counts["sent"] as? Int == Self.count && counts["duplicates"] as? Int == 500 && counts["pending"] as? Int == 0)
        let sentRows = try String(contentsOfFile: reports + "/deliveries.csv", encoding: .utf8)
            .split(separator: "\n").filter { $0.contains(",sent,200,") }.count
        #expect(sentRows == Self.count)
    }

    @Test func sigtermStopsWithExit4AndTheRerunSendsEachTokenExactlyOnce() throws {
        try writeAudience()
        let job = try writeJob(name: "term")
        let log = dir.file("out/term.ndjson")
        let (p, seen) = try signalMidSend(SIGTERM, job: job, after: 3_000)
        #expect(p.process.terminationReason == .exit && p.process.terminationStatus == 4, "graceful stop exits 4")
        #expect(seen < Self.count)
        // The stopped run recorded every answer and wrote its reports.
        let partial = try JSON.object(dir.file("reports/term/summary.json"))
        #expect(partial["exit_code"] as? Int == 4)
        let sentBefore = try #require((partial["counts"] as? [String: Any])?["sent"] as? Int)
        #expect(sentBefore == RequestLog.lineCount(log), "every answer received before the stop is recorded")

        let rerun = try herald.run(job)
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        try expectEveryoneOnce(try RequestLog.read(log), allowedResends: 0)
    }

    func expectEveryoneOnce(_ byToken: [String: [RequestLog.Attempt]], allowedResends: Int) throws {
        TwoFileAudience.expectEveryoneOnce(byToken, allowedResends: allowedResends)
    }
}

/// The kill tests' audience: 20,000 tokens over two gzip files, the second repeating 500 tokens of the first.
enum TwoFileAudience {
    static let count = 20_000

    /// The kill tests' job over that audience: 2 connections × 100 streams against the
    /// simulator, its request log in out/<name>.ndjson.
    static func job(_ name: String, _ configure: (inout TestJob) -> Void = { _ in }) -> TestJob {
        TestJob(name) {
            $0.audience.files = ["../data/a.csv.gz", "../data/b.csv.gz"]
            $0.apns.connections = 2
            $0.apns.streamsPerConnection = 100
            $0.push.template = #"{ aps: { alert: "Hi {{first_name}}" } }"#
            configure(&$0)
        }
    }

    static func write(in dir: TemporaryDirectory) throws {
        var a = ["token,first_name"]
        for i in 1...12_000 { a.append(String(format: "%064x,N%d", i, i)) }
        var b = ["token,first_name"]
        for i in 11_501...count { b.append(String(format: "%064x,N%d", i, i)) }
        try dir.writeGzip("data/a.csv.gz", a.joined(separator: "\n") + "\n")
        try dir.writeGzip("data/b.csv.gz", b.joined(separator: "\n") + "\n")
    }

    /// Every token of the audience got exactly one 200 (plus at most `allowedResends` resends of
    /// in-flight requests, each with its first attempt's apns-id and collapse id); no other token.
    static func expectEveryoneOnce(_ byToken: [String: [RequestLog.Attempt]], allowedResends: Int) {
        let expected = Set((1...count).map { String(format: "%064x", $0) })
        #expect(Set(byToken.keys) == expected, "nobody skipped, nobody unknown")
        #expect(byToken.values.allSatisfy { $0.allSatisfy { $0.status == 200 } })
        let resent = byToken.filter { $0.value.count > 1 }
        #expect(resent.count <= allowedResends, "\(resent.count) tokens sent more than once (allowed: \(allowedResends))")
        #expect(resent.allSatisfy { Set($0.value.map(\.apnsId)).count == 1 }, "a resend reuses its apns-id")
        #expect(resent.allSatisfy { Set($0.value.map(\.collapseId)).count == 1 }, "a resend reuses its collapse id")
    }
}
