import Foundation
import HeraldTestSupport
import Testing

/// `--pushgateway` against a real Prometheus Pushgateway (Debian's `prometheus-pushgateway`, which
/// `make test` installs when root), started by the test on 127.0.0.1 and scraped back over HTTP:
/// the samples herald pushed are what the gateway serves, grouped under job herald and the
/// campaign (and shard), and the group stays after the run with its exit code.
@Suite(.serialized) struct PushgatewayTests {
    static let binary = ["/usr/bin/prometheus-pushgateway", "/usr/local/bin/pushgateway"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let gatewayInstalled = Prerequisite(binary != nil, "prometheus-pushgateway (apt-get install -y prometheus-pushgateway)")
    let dir = TemporaryDirectory("e2e-pushgateway")

    /// A gateway on a free port; stopped with SIGTERM by `BackgroundProcess`.
    func startGateway() throws -> (BackgroundProcess, String) {
        let port = try FreePort.next()
        // In memory only: Debian's default persistence file would carry groups from one test (or
        // one machine's earlier runs) into the next.
        let gateway = try BackgroundProcess(Self.binary!, ["--web.listen-address=127.0.0.1:\(port)", "--persistence.file="], watch: .stderr)
        let url = "http://127.0.0.1:\(port)"
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if (try? scrape(url)) != nil { return (gateway, url) }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw TestSupportError("the Pushgateway did not answer on \(url)")
    }

    func scrape(_ url: String) throws -> String {
        let r = try ProcessRunner.run("/usr/bin/curl", ["-sS", "--fail", "\(url)/metrics"])
        guard r.status == 0 else { throw TestSupportError("scrape failed: \(r.stderr)") }
        return r.stdout
    }

    /// The value of the sample named `name` whose labels include every one of `labels`.
    func value(_ text: String, _ name: String, _ labels: [String: String]) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + "{") {
            // Up to the last "} ": a label value may hold braces ({date}).
            guard let close = line.range(of: "} ", options: .backwards) else { continue }
            let inside = line[line.index(line.startIndex, offsetBy: name.count + 1)..<close.lowerBound]
            let has = labels.allSatisfy { inside.contains("\($0.key)=\"\($0.value)\"") }
            if has, let v = line.split(separator: " ").last.flatMap({ Double($0) }) { return v }
        }
        return nil
    }

    let herald = Herald()

    /// A job sending `tokens` recipients; its files are named after the campaign without its braces.
    func job(_ name: String, tokens: Int, _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TestJob(name.filter { $0.isLetter || $0.isNumber || $0 == "-" }, tokens: (1...tokens).map { String(format: "%064x", $0) }) {
            $0.campaign = name
            $0.apns.streamsPerConnection = 10
            configure(&$0)
        }.write(in: dir)
    }

    @Test(.enabled(if: gatewayInstalled.runs, gatewayInstalled.skipReason))
    func theGroupCarriesTheRunsFiguresAndStaysAfterIt() throws {
        try Self.gatewayInstalled.require()
        let (gateway, url) = try startGateway()
        defer { _ = gateway.stop() }

        // Exit 0, the gateway from the job.
        let ok = try job("pg-digest.{date}", tokens: 30) { $0.ops.pushgateway = url }
        var r = try herald.run(ok)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        var text = try scrape(url)
        let group = ["job": "herald", "campaign": "pg-digest.{date}"]
        #expect(value(text, "herald_last_exit_code", group) == 0, "\(text.prefix(3000))")
        #expect(value(text, "herald_recipients", group.merging(["status": "sent"]) { a, _ in a }) == 30)
        #expect(value(text, "herald_run_in_progress", group) == 0)
        let finished = try #require(value(text, "herald_last_run_finished_timestamp_seconds", group))
        #expect(abs(finished - Date().timeIntervalSince1970) < 120)
        #expect(value(text, "push_time_seconds", group) != nil, "the gateway's own push time")

        // Exit 4 (retries exhausted), with --pushgateway and a shard: its own group.
        let flaky = try job("pg-flaky", tokens: 4) {
            $0.apns.simulator.flaky = [.init(prefix: "0", count: 5, status: 503)]
            $0.retry.maxAttempts = 1
        }
        r = try herald.run(flaky, ["--pushgateway", url, "--shard", "0/1"])
        #expect(r.status == 4, "\(r.stdout)\(r.stderr)")
        text = try scrape(url)
        #expect(value(text, "herald_last_exit_code", ["job": "herald", "campaign": "pg-flaky", "shard": "0"]) == 4, "\(text.prefix(3000))")
        // The first group is still there.
        #expect(value(text, "herald_last_exit_code", group) == 0)
    }

    /// While the run goes, the group says so (pushed every --metrics-interval).
    @Test(.enabled(if: gatewayInstalled.runs, gatewayInstalled.skipReason))
    func aRunningCampaignIsPushedPeriodically() throws {
        try Self.gatewayInstalled.require()
        let (gateway, url) = try startGateway()
        defer { _ = gateway.stop() }
        let slow = try job("pg-slow", tokens: 600) { $0.apns.simulator.latencyMs = 50 }
        let p = try herald.start(["run", slow.path, "--pushgateway", url, "--metrics-interval", "1s", "--progress", "never"])
        var running: Double?
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, p.process.isRunning, running == nil {
            running = value((try? scrape(url)) ?? "", "herald_run_in_progress", ["campaign": "pg-slow"])
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(running == 1, "a push while the run was going")
        p.process.waitUntilExit()
        #expect(p.process.terminationStatus == 0)
        #expect(value(try scrape(url), "herald_run_in_progress", ["campaign": "pg-slow"]) == 0)
    }

    /// A gateway that is not there: warned about, never fatal.
    @Test func anUnreachableGatewayNeverChangesTheRun() throws {
        let port = try FreePort.next()
        let path = try job("pg-down", tokens: 5)
        let r = try herald.run(path, ["--pushgateway", "http://127.0.0.1:\(port)"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("cannot push metrics to the Pushgateway at 127.0.0.1:\(port)"), "\(r.stderr)")
    }
}
