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

    func writeJob(name: String, extra: String = "") throws -> String {
        try TwoFileAudience.writeJob(in: dir, name: name, extra: extra)
    }

    /// Starts `herald run`, waits for `HERALD_TEST_STALL_AT`'s point, and SIGKILLs it there.
    func killAt(_ point: String, job: String) throws {
        let p = try BackgroundProcess(ProcessRunner.heraldBinary, ["run", job], watch: .stderr,
                                      environment: ["HERALD_TEST_STALL_AT": point])
        let line = try p.waitForLine(prefix: "herald-test: stalled at")
        #expect(line == "herald-test: stalled at \(point)")
        p.kill9()
        #expect(p.process.terminationReason == .uncaughtSignal)
    }

    /// Starts `herald run` and signals it once the simulator has answered `after` requests.
    func signalMidSend(_ sig: Int32, job: String, log: String, after: Int) throws -> (BackgroundProcess, Int) {
        let p = try BackgroundProcess(ProcessRunner.heraldBinary, ["run", job])
        let seen = RequestLog.wait(for: after, in: log) { p.process.isRunning }
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
        let (_, seen) = try signalMidSend(SIGKILL, job: job, log: log, after: 4_000)
        #expect(seen >= 4_000 && seen < Self.count, "killed mid-send (\(seen) answered)")

        // 3. Killed while writing the reports (deliveries.csv written, invalid.csv and summary.json not).
        try killAt("report:1", job: job)
        let reports = dir.file("reports/\(name)")
        #expect(FileManager.default.fileExists(atPath: reports + "/deliveries.csv"))
        #expect(!FileManager.default.fileExists(atPath: reports + "/summary.json"))

        // 4. Rerun: everything was sent; the missing reports are written and nothing is sent.
        let before = RequestLog.lineCount(log)
        let rerun = try ProcessRunner.run(ProcessRunner.heraldBinary, ["run", job])
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        #expect(rerun.stdout.contains("already finished") && rerun.stdout.contains("regenerated"), "\(rerun.stdout)")
        #expect(RequestLog.lineCount(log) == before)
        let again = try ProcessRunner.run(ProcessRunner.heraldBinary, ["run", job])
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
        let (p, seen) = try signalMidSend(SIGTERM, job: job, log: log, after: 3_000)
        #expect(p.process.terminationReason == .exit && p.process.terminationStatus == 4, "graceful stop exits 4")
        #expect(seen < Self.count)
        // The stopped run recorded every answer and wrote its reports.
        let partial = try JSON.object(dir.file("reports/term/summary.json"))
        #expect(partial["exit_code"] as? Int == 4)
        let sentBefore = try #require((partial["counts"] as? [String: Any])?["sent"] as? Int)
        #expect(sentBefore == RequestLog.lineCount(log), "every answer received before the stop is recorded")

        let rerun = try ProcessRunner.run(ProcessRunner.heraldBinary, ["run", job])
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
    static func writeJob(in dir: TemporaryDirectory, name: String, extra: String = "") throws -> String {
        try dir.write("jobs/\(name).yaml", """
            campaign: \(name)
            audience: { files: [../data/a.csv.gz, ../data/b.csv.gz] }
            apns:
              endpoint: simulator
              topic: com.example.app
              connections: 2
              streams_per_connection: 100
              simulator: { log: ../out/\(name).ndjson }
            push:
              template: { aps: { alert: "Hi {{first_name}}" } }
            \(extra)
            """)
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

/// The simulator's NDJSON request log, as the tests read it.
enum RequestLog {
    struct Attempt { var status: Int; var apnsId: String; var collapseId: String? }

    /// Lines in the log (memchr over the bytes: the tests poll this while herald runs, so it must
    /// cost next to nothing even in a debug build).
    static func lineCount(_ path: String) -> Int {
        guard let data = FileManager.default.contents(atPath: path) else { return 0 }
        return data.withUnsafeBytes { raw -> Int in
            guard var p = raw.baseAddress else { return 0 }
            let end = p + raw.count
            var n = 0
            while p < end, let hit = memchr(p, 0x0A, end - p) {
                n += 1
                p = UnsafeRawPointer(hit) + 1
            }
            return n
        }
    }

    /// Polls until the log has `count` lines or `running` turns false (at most a minute).
    static func wait(for count: Int, in path: String, while running: () -> Bool) -> Int {
        var seen = 0
        waitUntil(timeout: 60, pollInterval: 0.02) {
            seen = lineCount(path)
            return seen >= count || !running()
        }
        return seen
    }

    static func read(_ path: String) throws -> [String: [Attempt]] {
        var out: [String: [Attempt]] = [:]
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let headers = o["headers"] as? [String: String] ?? [:]
            out[o["token"] as? String ?? "", default: []].append(
                Attempt(status: o["status"] as? Int ?? 0, apnsId: o["apns_id"] as? String ?? "", collapseId: headers["apns-collapse-id"]))
        }
        return out
    }
}

enum JSON {
    static func object(_ path: String) throws -> [String: Any] {
        let data = try #require(FileManager.default.contents(atPath: path), "\(path) missing")
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
}
