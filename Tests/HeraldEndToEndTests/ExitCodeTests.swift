import Foundation
import HeraldTestSupport
import Testing

/// Every documented exit code of `herald run`, one test each, on the built binary (README "Exit
/// codes", `herald --help`):
///
/// | code | test here | also covered by |
/// |---|---|---|
/// | 0 finished | `exit0Finished` | RunCommandTests, CrashResumeTests |
/// | 2 usage (every command) | `exit2UsageErrorOfEveryCommand` | |
/// | 2 configuration | `exit2Configuration` | RunCommandTests.badInputExitsTwoAndSendsNothing |
/// | 2 audience | `exit2Audience` | RunCommandTests.badInputExitsTwoAndSendsNothing, ValidateCommandTests |
/// | 3 fatal APNs error | `exit3FatalAPNsError` | AbortAndSimCommandTests |
/// | 4 retries exhausted | `exit4RetriesExhausted` | |
/// | 4 signal | `exit4Signal` | CrashResumeTests.sigtermStopsWithExit4… |
/// | 5 too many invalid rows | `exit5TooManyInvalidRows` | CampaignStateTests, ValidateCommandTests |
/// | 75 lock held | `exit75LockHeld` | CampaignStateTests |
@Suite(.serialized) struct ExitCodeTests {
    let dir = TemporaryDirectory("e2e-exit")

    let herald = Herald()

    /// A job sending `rows` (one token a row) from data/<name>.csv on `streams` streams.
    func job(_ name: String, rows: [String], streams: Int = 10, _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TestJob(name, tokens: rows) {
            $0.apns.streamsPerConnection = streams
            configure(&$0)
        }.write(in: dir)
    }

    func sent(_ name: String) -> Int { RequestLog.lineCount(dir.file("out/\(name).ndjson")) }

    @Test func exit0Finished() throws {
        let r = try herald.run(try job("ok", rows: tokens(1...5)))
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(sent("ok") == 5)
        let help = try herald(["--help"])
        #expect(help.status == 0)
        for code in ["0 ", "2 ", "3 ", "4 ", "5 ", "75 "] { #expect(help.stdout.contains("\n  \(code)"), "--help documents exit \(code)") }
    }

    /// ArgumentParser's own exit for usage errors is 64; herald's contract is 2, for every command.
    @Test func exit2UsageErrorOfEveryCommand() throws {
        let path = try job("usage", rows: tokens(1...2))
        let cases: [[String]] = [
            ["frobnicate"],                                  // unknown command
            ["--no-such-flag"],
            ["run"],                                         // missing job argument
            ["run", path.path, "--no-such-flag"],
            ["run", path.path, "--progress", "sometimes"],
            ["run", path.path, "--log-format", "xml"],
            ["run", path.path, "--log-level", "loud"],
            ["run", path.path, "--shard", "4/4"],
            ["run", path.path, "--metrics-interval", "0s"],
            ["status"],
            ["status", path.path, "--bogus"],
            ["validate"],
            ["validate", path.path, "--bogus"],
            ["preview", path.path, "-n", "many"],
            ["sim", "--port", "not-a-port"],
        ]
        for args in cases {
            let r = try herald(args)
            #expect(r.status == 2, "herald \(args.joined(separator: " ")): \(r.status) \(r.stderr)")
            #expect(r.stderr.contains("Error:") || r.stderr.contains("error:"), "\(args): \(r.stderr)")
        }
        // Half of a Kubernetes Indexed Job's shard environment is a usage error too, before anything is read.
        let half = try herald.run(path, environment: ["JOB_COMPLETION_INDEX": "1", "HERALD_SHARD_COUNT": nil])
        #expect(half.status == 2 && half.stderr.contains("HERALD_SHARD_COUNT"), "\(half.stderr)")
        #expect(sent("usage") == 0)
    }

    @Test func exit2Configuration() throws {
        let r = try herald.run(try job("config", rows: tokens(1...2)) { $0.retry.maxAttempts = 0 })
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("config.yaml") && r.stderr.contains("max_attempts"), "\(r.stderr)")
        #expect(sent("config") == 0)
    }

    @Test func exit2Audience() throws {
        let path = try job("audience", rows: tokens(1...2))
        try dir.write("data/audience.csv", "id,name\n1,no token column\n")
        let r = try herald.run(path)
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("audience.csv"), "\(r.stderr)")
        #expect(sent("audience") == 0)
    }

    /// A provider token the server rejects (signed with a key it does not know): 403 InvalidProviderToken.
    @Test func exit3FatalAPNsError() throws {
        let trusted = TestKey()
        try FileManager.default.createDirectory(atPath: dir.file("out"), withIntermediateDirectories: true)
        let sim = try SimulatorProcess(in: dir, trusting: trusted, log: dir.file("out/fatal.ndjson"))
        defer { sim.stop() }
        let other = try TestKey().writeP8(in: dir)
        let path = try job("fatal", rows: tokens(1...20)) { $0.apns.endpoint = "production"; $0.apns.keyFile = other }
        let r = try herald.run(path, sim.endpointArguments)
        #expect(r.status == 3, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("InvalidProviderToken"), "\(r.stderr)")
        #expect(sent("fatal") <= 10, "stopped after the first window")
    }

    /// Tokens that keep answering 503 beyond retry.max_attempts stay retryable: exit 4, rerun later.
    @Test func exit4RetriesExhausted() throws {
        let flaky = tokens(1...3, prefix: "f1a4")
        let path = try job("retries", rows: tokens(1...5) + flaky) {
            $0.apns.simulator.flaky = [.init(prefix: "f1a4", count: 5, status: 503)]
            $0.retry.maxAttempts = 1
        }
        let r = try herald.run(path)
        #expect(r.status == 4, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("3 recipient(s) still retryable"), "\(r.stderr)")
        #expect(sent("retries") == 8, "each token tried once")
    }

    @Test func exit4Signal() throws {
        let path = try job("signal", rows: tokens(1...200), streams: 1) { $0.apns.simulator.latencyMs = 50 }
        let p = try herald.start(["run", path.path])
        _ = RequestLog.wait(for: 3, in: dir.file("out/signal.ndjson")) { p.process.isRunning }
        kill(p.pid, SIGTERM)
        p.process.waitUntilExit()
        #expect(p.process.terminationReason == .exit && p.process.terminationStatus == 4)
        #expect(sent("signal") < 200)
    }

    @Test func exit5TooManyInvalidRows() throws {
        let r = try herald.run(try job("invalid", rows: tokens(1...10) + ["nothex", "abc"]))
        #expect(r.status == 5, "\(r.stdout)\(r.stderr)")
        #expect(sent("invalid") == 0)
    }

    /// The lock is an flock on `<state>.lock`: held here by the test itself, as a running herald would.
    @Test func exit75LockHeld() throws {
        let path = try job("locked", rows: tokens(1...3))
        try FileManager.default.createDirectory(atPath: dir.file("state"), withIntermediateDirectories: true)
        let fd = open(dir.file("state/locked.sqlite.lock"), O_CREAT | O_RDWR, 0o600)
        #expect(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        defer { close(fd) }
        let r = try herald.run(path)
        #expect(r.status == 75, "\(r.stdout)\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("state/locked.sqlite")), "the state file was not touched")
        #expect(sent("locked") == 0)
    }
}
