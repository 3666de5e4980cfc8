import Foundation
import HeraldTestSupport
import Testing

/// `herald sim` as scripts drive it: flags, the `listening on` line, signals, the request log's
/// stats line, one-line errors with exit 2, and `herald run` rehearsing against it.
@Suite(.serialized) struct SimCommandTests {
    let dir = TemporaryDirectory("e2e-simcmd")

    static func token(_ i: Int, prefix: String = "") -> String { prefix + String(format: "%0\(64 - prefix.count)x", i) }

    let herald = Herald()

    func start(_ extra: [String], key: TestKey) throws -> (SimulatorProcess, URL) {
        let sim = try SimulatorProcess(in: dir, trusting: key, arguments: extra)
        return (sim, try #require(URL(string: sim.url)))
    }

    /// A job of `tokens` sent to `herald sim` with `key`.
    func rehearsal(_ name: String, tokens: [String], key: TestKey, _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        let keyFile = try key.writeP8(in: dir)
        return try TestJob(name, tokens: tokens) {
            $0.apns.endpoint = "production"
            $0.apns.keyFile = keyFile
            configure(&$0)
        }.write(in: dir)
    }

    func logLines() throws -> [[String: Any]] {
        try String(contentsOfFile: dir.file("sim/requests.ndjson"), encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test func helpDocumentsEveryFlag() throws {
        let r = try herald(["sim", "--help"])
        #expect(r.status == 0)
        let flags = ["--host", "--port", "--cert", "--key", "--ca-out", "--team-id", "--key-id", "--auth-key", "--auth-public-key",
                     "--bundle-id", "--client-ca", "--log", "--unregistered-prefix", "--expired-token-prefix", "--bad-token-prefix",
                     "--not-for-topic-prefix", "--flaky-prefix", "--flaky-count", "--flaky-status", "--jwt-max-age", "--p429", "--p500",
                     "--p503", "--seed", "--latency-ms", "--latency-jitter-ms", "--goaway-after", "--close-after", "--close-mode",
                     "--max-concurrent-streams", "--token-update-interval", "--management-port", "--channel-limit"]
        for flag in flags {
            // The flag's own line carries its help text (or the next line does, for long names).
            let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let i = try #require(lines.firstIndex { $0.trimmingCharacters(in: .whitespaces).hasPrefix(flag + " ") }, "\(flag) is listed")
            let text = lines[i].split(separator: ">", maxSplits: 1).dropFirst().joined() + (i + 1 < lines.count ? lines[i + 1] : "")
            #expect(text.trimmingCharacters(in: .whitespaces).count > 10, "\(flag) has help text")
        }
    }

    @Test(arguments: [SIGINT, SIGTERM])
    func stopsCleanlyOnSignalWithAStatsLine(signal: Int32) throws {
        let key = TestKey()
        let (sim, url) = try start([], key: key)
        #expect(url.scheme == "https" && url.host == "127.0.0.1" && (url.port ?? 0) > 0)
        kill(sim.process.pid, signal)
        sim.process.process.waitUntilExit()
        #expect(sim.process.process.terminationReason == .exit && sim.process.process.terminationStatus == 0)
        let lines = try logLines()
        #expect(lines.count == 1)
        let stats = try #require(lines.last?["stats"] as? [String: Any])
        #expect(stats["requests"] as? Int == 0 && stats["connections"] as? Int == 0)
    }

    /// Token rules from flags, rehearsed by `herald run --endpoint --ca-file`: the reports show
    /// Apple's reasons, the flaky token recovers on the runner's retry, and the request log ends
    /// with stats that add up.
    @Test func flagsDriveTheTokenRulesOfARehearsal() throws {
        let key = TestKey()
        let (sim, _) = try start(["--unregistered-prefix", "dead", "--expired-token-prefix", "e0", "--not-for-topic-prefix", "f0",
                                    "--bad-token-prefix", "badd", "--flaky-prefix", "f1", "--flaky-count", "1", "--flaky-status", "500"], key: key)
        defer { sim.stop() }
        let job = try rehearsal("job", tokens: (1...5).map { Self.token($0) } + ["dead", "e0", "f0", "badd", "f1"].map { Self.token(1, prefix: $0) }, key: key) {
            $0.campaign = "sim-flags"
            $0.retry.maxAttempts = 3
        }
        let r = try herald.run(job, sim.endpointArguments)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let deliveries = try String(contentsOfFile: dir.file("reports/sim-flags/deliveries.csv"), encoding: .utf8).split(separator: "\n")
        func row(_ token: String) -> String { deliveries.first { $0.contains(token) }.map(String.init) ?? "" }
        #expect(row(Self.token(1, prefix: "dead")).contains(",410,Unregistered,"))
        #expect(row(Self.token(1, prefix: "e0")).contains(",410,ExpiredToken,"))
        #expect(row(Self.token(1, prefix: "f0")).contains(",400,DeviceTokenNotForTopic,"))
        #expect(row(Self.token(1, prefix: "badd")).contains(",400,BadDeviceToken,"))
        #expect(row(Self.token(1, prefix: "f1")).contains(",sent,200,"), "the flaky token recovered: \(row(Self.token(1, prefix: "f1")))")
        for i in 1...5 { #expect(row(Self.token(i)).contains(",sent,200,")) }

        #expect(sim.stop() == 0)
        let lines = try logLines()
        let stats = try #require(lines.last?["stats"] as? [String: Any])
        #expect(stats["requests"] as? Int == lines.count - 1, "one line per request, then the stats")
        #expect((stats["by_fault"] as? [String: Int])?["flaky"] == 1)
        #expect((stats["by_reason"] as? [String: Int])?["InternalServerError"] == 1)
        #expect(lines.dropLast().allSatisfy { ($0["headers"] as? [String: String])?["apns-topic"] == "com.example.app" })
    }

    /// Slow answers are not pushback: with every answer 300 ms away, `herald run` keeps its whole
    /// window in flight (adaptive concurrency shrinks it on 429s, 5xx and lost connections only).
    @Test func slowAnswersKeepEveryStreamInFlight() throws {
        let key = TestKey()
        let (sim, _) = try start(["--latency-ms", "300"], key: key)
        defer { sim.stop() }
        let job = try rehearsal("slow", tokens: (1...500).map { Self.token($0) }, key: key) {
            $0.campaign = "sim-slow"
            $0.apns.connections = 1
            $0.apns.streamsPerConnection = 100
        }
        let r = try herald.run(job, sim.endpointArguments)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(sim.stop() == 0)
        let lines = try logLines()
        let stats = try #require(lines.last?["stats"] as? [String: Any])
        #expect(stats["requests"] as? Int == 500 && (stats["by_status"] as? [String: Int])?["200"] == 500)
        #expect(stats["peak_awaiting_latency"] as? Int == 100, "every stream in flight at once: \(stats)")
    }

    @Test func badConfigurationIsOneLineAndExitTwo() throws {
        let pub = try dir.write("pub.pem", TestKey().publicKeyPEM)
        let auth = ["--port", "0", "--team-id", TestKey.teamId, "--key-id", TestKey.keyId, "--auth-public-key", pub]
        let holder = try herald.start(["sim"] + auth)
        defer { _ = holder.stop() }
        let taken = try #require(URL(string: String(try holder.waitForLine(prefix: "listening on ").dropFirst("listening on ".count)))?.port)
        let cases: [([String], String)] = [
            (["--cert", "/nonexistent/server.pem", "--key", "/nonexistent/server.key"], "cannot read TLS certificate file /nonexistent/server.pem: no such file"),
            (["--cert", pub, "--key", pub], "unusable TLS certificate or key: \(pub)"),
            (["--port", "\(taken)"], "cannot bind 127.0.0.1:\(taken): address in use"),
            (["--port", "http"], "--port must be a whole number from 0 to 65535, not \"http\""),
            (["--p503", "1.5"], "--p503 must be a probability from 0 to 1, not \"1.5\""),
            (["--p429", "lots"], "--p429 must be a probability from 0 to 1, not \"lots\""),
            (["--p429", "0.6", "--p500", "0.6"], "--p429 + --p500 + --p503 must not exceed 1"),
            (["--seed", "-1"], "--seed must be a whole number"),
            (["--close-after", "3", "--close-mode", "sideways"], "--close-mode must be before or after, not \"sideways\""),
            (["--goaway-after", "0"], "--goaway-after must be a whole number from 1"),
            (["--latency-ms", "-5"], "--latency-ms must be a whole number from 0"),
            (["--flaky-prefix", "ab", "--flaky-status", "404"], "--flaky-status must be 429, 500 or 503, not \"404\""),
            (["--flaky-prefix", "ab", "--flaky-count", "1", "--flaky-count", "2"], "--flaky-count is given 2 times for 1 --flaky-prefix"),
            (["--flaky-count", "2"], "--flaky-count and --flaky-status need a --flaky-prefix"),
            (["--unregistered-prefix", "xyz"], "--unregistered-prefix must be hex digits, not \"xyz\""),
            (["--max-concurrent-streams", "0"], "--max-concurrent-streams must be a whole number from 1"),
            (["--goaway-reason", "two words", "--goaway-after", "1"], "the GOAWAY reason must be one word"),
            (["--client-ca", "/nonexistent/ca.pem"], "--client-ca (certificate authentication) excludes --team-id"),
            (["--log", "/nonexistent/dir/requests.ndjson"], "cannot open request log /nonexistent/dir/requests.ndjson"),
        ]
        for (extra, message) in cases {
            let r = try herald(["sim"] + (extra.first == "--port" ? Array(auth.dropFirst(2)) : auth) + extra)
            #expect(r.status == 2, "\(extra): \(r.stderr)")
            #expect(r.stdout.isEmpty, "\(extra): nothing listened")
            #expect(r.stderr.hasPrefix("herald: error: ") && r.stderr.contains(message), "\(extra): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(extra): one line")
        }
        let noAuth = try herald(["sim", "--port", "0"])
        #expect(noAuth.status == 2 && noAuth.stderr == "herald: error: give --team-id and --key-id (or --client-ca for certificate authentication)\n")
        let missingCA = try herald(["sim", "--port", "0", "--client-ca", "/nonexistent/ca.pem"])
        #expect(missingCA.status == 2 && missingCA.stderr.contains("cannot read client CA file /nonexistent/ca.pem: no such file"), "\(missingCA.stderr)")
    }

    /// The job's `apns.simulator` keys reach the in-process simulator of `endpoint: simulator`.
    @Test func jobKeysDriveTheInProcessSimulator() throws {
        let job = try TestJob("job", tokens: (1...4).map { Self.token($0) } + ["e0", "f0"].map { Self.token(1, prefix: $0) }) {
            $0.campaign = "sim-keys"
            $0.apns.simulator.expiredTokenPrefixes = ["e0"]
            $0.apns.simulator.notForTopicPrefixes = ["f0"]
            $0.apns.simulator.latencyMs = 2
            $0.apns.simulator.maxConcurrentStreams = 4
            $0.apns.simulator.log = "../out/requests.ndjson"
        }.write(in: dir)
        let r = try herald.run(job)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let deliveries = try String(contentsOfFile: dir.file("reports/sim-keys/deliveries.csv"), encoding: .utf8)
        #expect(deliveries.contains(",410,ExpiredToken,") && deliveries.contains(",400,DeviceTokenNotForTopic,"))
        #expect(deliveries.components(separatedBy: ",sent,200,").count - 1 == 4)
        let log = try String(contentsOfFile: dir.file("out/requests.ndjson"), encoding: .utf8).split(separator: "\n")
        #expect(log.count == 6 && !log.contains { $0.contains("\"stats\"") }, "herald run's log is one line per request")
    }

    /// `--management-port 0` prints where the channel management API listens (the API itself is
    /// tested over the wire in HeraldSimulatorTests), and SIGTERM stops both ports.
    @Test func theManagementPortIsAnnouncedAndStopsWithTheSimulator() throws {
        let (sim, url) = try start(["--management-port", "0", "--channel-limit", "1"], key: TestKey())
        let line = try sim.process.waitForLine(prefix: "channel management on ")
        let management = try #require(URL(string: String(line.dropFirst("channel management on ".count)))?.port)
        #expect(management != url.port && management > 0)
        #expect(sim.stop() == 0)
        let bad = try herald(["sim", "--port", "0", "--management-port", "70000", "--team-id", TestKey.teamId, "--key-id", TestKey.keyId,
                           "--auth-public-key", dir.file("sim/pub.pem")])
        #expect(bad.status == 2 && bad.stderr.contains("--management-port"), "\(bad.stderr)")
    }
}
