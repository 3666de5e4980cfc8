import Foundation
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What the systems around a run hear from it, on the built `herald run`: a cron monitor's pings
/// (`ops.ping_url`, `--ping-url`; healthchecks.io's convention) to an HTTP receiver in the test, and
/// systemd's readiness datagrams (`NOTIFY_SOCKET`) to a datagram socket in the test.
@Suite(.serialized) struct CronPingAndSystemdTests {
    let dir = TemporaryDirectory("e2e-ops")

    let herald = Herald()

    /// A job sending `rows` (one token a row) from data/<name>.csv.
    func job(_ name: String, rows: [String], _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TestJob(name, tokens: rows) {
            $0.apns.streamsPerConnection = 10
            configure(&$0)
        }.write(in: dir)
    }

    /// A start ping, then the end ping named by the exit code (CronPingTableTests has every row),
    /// carrying the result lines.
    @Test func pingsStartAndEndWithTheExitCode() throws {
        let monitor = try HTTPReceiver()
        defer { monitor.stop() }
        let check = "\(monitor.url)/ping/5b7e4c1a"

        let ok = try job("ping-ok", rows: tokens(1...5)) { $0.ops.pingURL = check }
        var r = try herald.run(ok)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        var got = monitor.requests
        #expect(got.map(\.path) == ["/ping/5b7e4c1a/start", "/ping/5b7e4c1a"])
        #expect(got.allSatisfy { $0.method == "POST" })
        #expect(got.last?.body.contains("5 sent") == true && got.last?.body.contains("result    finished") == true, "\(got.last?.body ?? "")")

        // Exit 3 (every answer a fatal one), with the URL given on the command line instead.
        let fatal = try job("ping-fatal", rows: tokens(1...20, prefix: "a")) { $0.apns.simulator.answers = [("a", "BadTopic")] }
        r = try herald.run(fatal, ["--ping-url", check + "/"])
        #expect(r.status == 3, "\(r.stdout)\(r.stderr)")
        got = Array(monitor.requests.dropFirst(2))
        #expect(got.map(\.path) == ["/ping/5b7e4c1a/start", "/ping/5b7e4c1a/3"])
        #expect(got.last?.body.contains("BadTopic") == true, "the end ping says why: \(got.last?.body ?? "")")

        // Exit 4 (retries exhausted): incomplete, recorded without changing the check.
        let retries = try job("ping-retries", rows: tokens(1...3, prefix: "f1a4")) {
            $0.apns.simulator.flaky = [.init(prefix: "f1a4", count: 5, status: 503)]
            $0.ops.pingURL = check
            $0.retry.maxAttempts = 1
        }
        r = try herald.run(retries)
        #expect(r.status == 4, "\(r.stdout)\(r.stderr)")
        got = Array(monitor.requests.dropFirst(4))
        #expect(got.map(\.path) == ["/ping/5b7e4c1a/start", "/ping/5b7e4c1a/log"])

        // A job that does not load: only the command line's URL is known, and it hears exit 2.
        let broken = try dir.write("jobs/broken.yaml", "campaign: broken\n")
        r = try herald(["run", broken, "--ping-url", check])
        #expect(r.status == 2)
        got = Array(monitor.requests.dropFirst(6))
        #expect(got.map(\.path) == ["/ping/5b7e4c1a/2"])
        #expect(got.first?.body.contains("audience is required") == true, "\(got.first?.body ?? "")")
    }

    /// A monitor that fails or never answers is tried again, logged, and changes nothing: the
    /// campaign is sent and the exit status is the run's. The URL's path (the check's secret)
    /// never reaches the log.
    @Test(arguments: [HTTPReceiver.Answer.status(500), .hang])
    func aFailingMonitorNeverChangesTheRun(answer: HTTPReceiver.Answer) throws {
        let monitor = try HTTPReceiver(answer: answer)
        defer { monitor.stop() }
        let name = answer == .hang ? "ping-hang" : "ping-500"
        let path = try job(name, rows: tokens(1...5)) { $0.ops.pingURL = "\(monitor.url)/secret-check-id"; $0.ops.pingTimeout = "1s" }
        let r = try herald.run(path)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(RequestLog.lineCount(dir.file("out/\(name).ndjson")) == 5, "every recipient sent")
        let paths = monitor.requests.map(\.path)
        #expect(paths == Array(repeating: "/secret-check-id/start", count: 3) + Array(repeating: "/secret-check-id", count: 3), "\(paths)")
        #expect(r.stderr.contains("cron monitor ping failed after 3 tries"), "\(r.stderr)")
        #expect(r.stderr.contains(answer == .hang ? "127.0.0.1" : "127.0.0.1 answered HTTP 500"), "\(r.stderr)")
        #expect(!r.stderr.contains("secret-check-id") && !r.stdout.contains("secret-check-id"))
    }

    @Test func aPingURLThatIsNotHTTPIsAConfigurationError() throws {
        let path = try job("ping-bad", rows: tokens(1...2)) { $0.ops.pingURL = "ftp://example.com/x" }
        let r = try herald.run(path)
        #expect(r.status == 2)
        #expect(r.stderr.contains("ops.ping_url") && r.stderr.contains("line"), "\(r.stderr)")
        let slow = try job("ping-slow", rows: tokens(1...2)) { $0.ops.pingURL = "http://127.0.0.1:9/x"; $0.ops.pingTimeout = "90s" }
        let t = try herald.run(slow)
        #expect(t.status == 2 && t.stderr.contains("ops.ping_timeout must be from 1s to 60s"), "\(t.stderr)")
        let flag = try herald.run(path, ["--ping-url", "hc-ping.com/x"])
        #expect(flag.status == 2 && flag.stderr.contains("--ping-url must be an http:// or https:// URL"), "\(flag.stderr)")
    }

    /// READY=1 once sending starts, STATUS lines while it sends, STOPPING=1 on a signal.
    @Test func systemdHearsReadyStatusAndStopping() throws {
        let socketPath = dir.file("notify.sock")
        let receiver = try DatagramReceiver(path: socketPath)
        defer { receiver.close() }
        let path = try job("notify", rows: tokens(1...1000)) { $0.apns.simulator.latencyMs = 50 }
        let p = try herald.start(["run", path.path, "--progress", "never"], environment: ["NOTIFY_SOCKET": socketPath])
        let ready = try #require(receiver.wait(timeout: 30) { $0.contains("READY=1") }, "READY=1 arrives")
        #expect(ready.contains("STATUS=sending"))
        let status = receiver.wait(timeout: 10) { $0.hasPrefix("STATUS=") && $0.contains("sent") }
        #expect(status != nil, "a progress line as STATUS: \(receiver.all)")
        kill(p.pid, SIGTERM)
        let stopping = receiver.wait(timeout: 10) { $0.contains("STOPPING=1") }
        #expect(stopping != nil, "STOPPING=1 on the signal: \(receiver.all)")
        p.process.waitUntilExit()
        #expect(p.process.terminationStatus == 4)
        #expect(receiver.all.filter { $0.contains("READY=1") }.count == 1, "READY=1 once")
    }

    /// A rerun of a finished campaign has nothing to send: READY=1 still comes, once, at the end.
    @Test func aRunWithNothingDueStillSaysReady() throws {
        let path = try job("notify-done", rows: tokens(1...3))
        #expect(try herald.run(path).status == 0)
        let socketPath = dir.file("notify-done.sock")
        let receiver = try DatagramReceiver(path: socketPath)
        defer { receiver.close() }
        let r = try herald.run(path, environment: ["NOTIFY_SOCKET": socketPath])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let ready = receiver.wait(timeout: 5) { $0.contains("READY=1") }
        #expect(ready?.contains("STATUS=campaign notify-done already finished") == true, "\(receiver.all)")
        #expect(receiver.all.filter { $0.contains("READY=1") }.count == 1)
    }

    /// sd_notify takes an absolute path or an abstract name ("@…") only: with NOTIFY_SOCKET unset,
    /// empty, or a relative path, nothing is sent. A socket is bound at that relative path in the
    /// run's working directory, so a notifier that took it would be seen.
    @Test func withoutAUsableNotifySocketNothingIsSent() throws {
        let path = try job("no-notify", rows: tokens(1...3))
        let receiver = try DatagramReceiver(path: dir.file("notify.sock"))
        defer { receiver.close() }
        for value in [nil, "", "notify.sock"] as [String?] {
            let r = try herald.run(path, ["--new-run"], environment: ["NOTIFY_SOCKET": value], cwd: dir.path)
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        }
        #expect(receiver.wait(timeout: 1) { _ in true } == nil, "nothing reached the socket: \(receiver.all)")
        // The same socket by its absolute path gets READY=1: the receiver can hear a notifier.
        #expect(try herald.run(path, ["--new-run"], environment: ["NOTIFY_SOCKET": dir.file("notify.sock")], cwd: dir.path).status == 0)
        #expect(receiver.wait(timeout: 5) { $0.contains("READY=1") } != nil, "\(receiver.all)")
    }
}
