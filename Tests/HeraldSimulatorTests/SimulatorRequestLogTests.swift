import Crypto
import Foundation
import HeraldCore
import HeraldDelivery
@testable import HeraldSimulator
import HeraldTestSupport
import Testing

/// The request log (entries, counters, NDJSON lines, stats line), configuration checks and the
/// listener's lifecycle.
@Suite struct SimulatorRequestLogTests {
    let dir = TemporaryDirectory("sim-log")

    func entry(status: Int?, reason: APNsReason?, outcome: SimulatorRequestLog.Outcome = .answered, fault: String? = nil) -> SimulatorRequestLog.Entry {
        let jwt = "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJUIn0.c2VjcmV0LXNpZ25hdHVyZQ"
        let request = SimulatorRequest(method: "POST", path: "/3/device/abcdef0123456789",
                                       headers: [("authorization", "bearer " + jwt), ("apns-topic", "com.example.app"),
                                                 ("apns-priority", "10"), ("user-agent", "test")],
                                       body: Array(#"{"aps":{"alert":"é\n"}}"#.utf8))
        let verdict = status.map {
            SimulatorVerdict(status: $0, reason: reason, timestamp: $0 == 410 ? 1_750_000_000_000 : nil, token: "abcdef0123456789",
                             providerToken: ProviderTokenClaims(kid: "KID", iss: "TEAM", iat: 42))
        }
        return SimulatorRequestLog.Entry(connection: 1, stream: 3, request: request, verdict: verdict,
                                         apnsId: status == nil ? nil : "00000000-0000-0000-0000-000000000001", outcome: outcome, fault: fault)
    }

    @Test func entryRedactsTheProviderTokenAndKeepsOnlyApnsHeaders() {
        let e = entry(status: 200, reason: nil)
        #expect(e.headers == ["apns-topic": "com.example.app", "apns-priority": "10", "authorization": "bearer kid=KID iss=TEAM iat=42"])
        #expect(e.jwtKid == "KID" && e.jwtIss == "TEAM" && e.jwtIat == 42)
        #expect(entry(status: nil, reason: nil).token == "abcdef0123456789", "an unprocessed request still names its token")
    }

    @Test func everyRequestIsOneFlushedLineAndTheStatsLineComesLast() throws {
        let path = dir.file("requests.ndjson")
        let log = try SimulatorRequestLog(path: path)
        log.connectionOpened()
        log.append(entry(status: 200, reason: nil))
        log.append(entry(status: 410, reason: "Unregistered"))
        log.append(entry(status: nil, reason: nil, outcome: .closedBeforeProcessing, fault: "close_before"))
        // Flushed per line: readable before close.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.split(separator: "\n").count == 3)
        log.writeStatsLine()
        log.close()
        #expect(log.count == 3)
        #expect(log.statusCounts() == [200: 1, 410: 1])
        #expect(log.entries().map(\.status) == [200, 410, nil])
        let stats = log.stats()
        #expect(stats.requests == 3 && stats.answered == 2 && stats.connections == 1)
        #expect(stats.byReason == ["Unregistered": 1] && stats.byFault == ["close_before": 1])

        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 4)
        #expect(!lines.joined().contains("c2VjcmV0"), "the JWT must never reach the log file")
        let objects = try lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        let gone = objects[1]
        #expect(Set(gone.keys) == ["time_ms", "connection", "stream", "method", "path", "token", "headers", "jwt_kid", "jwt_iss",
                                   "jwt_iat", "auth", "client_cn", "topic", "body", "status", "reason", "timestamp", "apns_id",
                                   "apns_unique_id", "outcome", "fault"])
        #expect(gone["topic"] as? String == "com.example.app", "the topic sent, when no verdict named one")
        #expect(gone["status"] as? Int == 410 && gone["reason"] as? String == "Unregistered")
        #expect(gone["timestamp"] as? Int == 1_750_000_000_000)
        #expect(gone["connection"] as? Int == 1 && gone["stream"] as? Int == 3)
        #expect(gone["token"] as? String == "abcdef0123456789")
        #expect(gone["jwt_kid"] as? String == "KID" && gone["jwt_iss"] as? String == "TEAM" && gone["jwt_iat"] as? Int == 42)
        #expect(gone["body"] as? String == #"{"aps":{"alert":"é\n"}}"#)
        #expect((gone["headers"] as? [String: String])?["apns-priority"] == "10")
        #expect(objects[2]["status"] is NSNull && objects[2]["outcome"] as? String == "closed_before_processing")
        let final = try #require(objects[3]["stats"] as? [String: Any])
        #expect(final["requests"] as? Int == 3 && final["answered"] as? Int == 2 && final["connections"] as? Int == 1)
        #expect(final["by_status"] as? [String: Int] == ["200": 1, "410": 1])
        #expect(final["by_fault"] as? [String: Int] == ["close_before": 1])
    }

    /// PINGs are kept and counted, and the stats line has them, but they are not request lines.
    @Test func pingsAreCountedAndKeptButAreNoRequestLines() throws {
        let path = dir.file("pings.ndjson")
        let log = try SimulatorRequestLog(path: path)
        log.pingReceived(connection: 2)
        log.append(entry(status: 200, reason: nil))
        log.pingReceived(connection: 3)
        #expect(log.pings().map(\.connection) == [2, 3] && log.stats().pings == 2 && log.count == 1)
        log.writeStatsLine()
        log.close()
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2, "one request line and the stats line")
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        #expect((stats["stats"] as? [String: Any])?["pings"] as? Int == 2)

        let counting = try SimulatorRequestLog(keepsEntries: false)
        counting.pingReceived(connection: 1)
        #expect(counting.pings().isEmpty && counting.stats().pings == 1)
    }

    @Test func withoutEntriesInMemoryOnlyCountersGrow() throws {
        let log = try SimulatorRequestLog(keepsEntries: false)
        for _ in 0..<10 { log.append(entry(status: 200, reason: nil)) }
        #expect(log.entries().isEmpty && log.count == 10 && log.statusCounts() == [200: 10])
    }

    @Test func unwritableLogPathIsAnOperatorError() {
        #expect(throws: SimulatorError.cannotOpenLog(path: "/nonexistent-dir/requests.ndjson", detail: String(cString: strerror(ENOENT)))) {
            try SimulatorRequestLog(path: "/nonexistent-dir/requests.ndjson")
        }
    }

    @Test func credentialsRoundTrip() throws {
        let pair = SimulatorCredentials.generate()
        #expect(pair.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(pair.publicKeyPEM.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        #expect(try SimulatorCredentials.publicKeyPEM(fromPrivateKeyPEM: pair.privateKeyPEM) == pair.publicKeyPEM)
        #expect(throws: SimulatorError.self) { try SimulatorCredentials.publicKeyPEM(fromPrivateKeyPEM: "garbage") }
    }

    @Test func startsOnAnEphemeralPortAndShutsDownTwice() throws {
        let simulator = try APNsSimulator.start(SimulatorConfiguration(teamId: "T", keyId: "K", publicKeyPEM: TestKey().publicKeyPEM))
        #expect(simulator.port > 0)
        #expect(simulator.caCertificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(simulator.requestLog.count == 0)
        try simulator.shutdown()
        try simulator.shutdown()
    }

    @Test func portInUseIsAnOperatorError() throws {
        let key = TestKey()
        let first = try APNsSimulator.start(SimulatorConfiguration(teamId: "T", keyId: "K", publicKeyPEM: key.publicKeyPEM))
        defer { try? first.shutdown() }
        var second = SimulatorConfiguration(teamId: "T", keyId: "K", publicKeyPEM: key.publicKeyPEM)
        second.port = first.port
        #expect(throws: SimulatorError.cannotBind(host: "127.0.0.1", port: first.port, detail: "address in use")) {
            try APNsSimulator.start(second)
        }
        #expect(SimulatorError.cannotBind(host: "127.0.0.1", port: 1, detail: "address in use").description
                == "simulator: cannot bind 127.0.0.1:1: address in use")
    }

    @Test func missingCertificateFileIsAnOperatorError() throws {
        var c = SimulatorConfiguration(teamId: "T", keyId: "K", publicKeyPEM: TestKey().publicKeyPEM)
        c.tls = .files(certificatePEMPath: "/nonexistent/cert.pem", privateKeyPEMPath: "/nonexistent/key.pem")
        do {
            let unexpected = try APNsSimulator.start(c)
            try? unexpected.shutdown()
            Issue.record("start with missing files succeeded")
        } catch {
            #expect(error.description == "simulator: cannot read TLS certificate file /nonexistent/cert.pem: no such file")
        }
    }

    @Test func operatorCertificateFilesServe() throws {
        let ca = try SimulatorCertificateAuthority()
        let leaf = try ca.issueServerCertificate(names: [.dnsName("localhost"), .ipAddress(.init(contentBytes: [127, 0, 0, 1]))])
        let h = try SimulatorHarness {
            $0.tls = .files(certificatePEMPath: (try? dir.write("server.pem", leaf.certificatePEM)) ?? "",
                            privateKeyPEMPath: (try? dir.write("server.key", leaf.privateKeyPEM)) ?? "")
        }
        defer { h.shutdown() }
        // Clients trust the certificate file itself (self-issued chains trust their CA instead).
        let conn = try TestConnection(settings: ConnectionSettings(baseURL: "https://127.0.0.1:\(h.sim.port)", trust: .caPEM(ca.certificatePEM)))
        #expect(try conn.send([Push.request(1)], authorization: try h.jwt())[0].outcome.status == 200)
        #expect(h.sim.caCertificatePEM == leaf.certificatePEM)
    }

    static func breakConfiguration(_ name: String, _ c: inout SimulatorConfiguration) {
        switch name {
        case "p503": c.faults.p503 = 1.5
        case "sum": c.faults.p429 = 0.6; c.faults.p500 = 0.6
        case "latency": c.faults.latencyMs = -1
        case "goaway": c.faults.goawayAfter = 0
        case "close": c.faults.closeAfter = 0
        case "reason": c.faults.goawayReason = "two words"
        case "flaky status": c.tokenRules.flaky = [FlakyTokenRule(prefix: "ab", failures: 1, status: 404)]
        case "flaky count": c.tokenRules.flaky = [FlakyTokenRule(prefix: "ab", failures: 0)]
        case "prefix": c.tokenRules.unregisteredPrefixes = ["dead", "xyz"]
        case "streams": c.maxConcurrentStreams = 0
        default: c.port = 70_000
        }
    }

    @Test(arguments: [
        ("p503", "p503 must be a probability between 0 and 1, not 1.5"),
        ("sum", "p429 + p500 + p503 must not exceed 1"),
        ("latency", "latency and jitter must be 0 or more milliseconds"),
        ("goaway", "goaway after must be at least 1 request, not 0"),
        ("close", "close after must be at least 1 request, not 0"),
        ("reason", "the GOAWAY reason must be one word"),
        ("flaky status", "flaky prefix ab: status must be 429, 500 or 503, not 404"),
        ("flaky count", "count must be at least 1"),
        ("prefix", "token prefix \"xyz\" must be hex digits"),
        ("streams", "max concurrent streams must be at least 1"),
        ("port", "port must be 0-65535"),
    ])
    func badConfigurationIsOneLine(_ name: String, _ message: String) {
        var c = SimulatorConfiguration(teamId: "T", keyId: "K", publicKeyPEM: TestKey().publicKeyPEM)
        Self.breakConfiguration(name, &c)
        do {
            let unexpected = try APNsSimulator.start(c)
            try? unexpected.shutdown()
            Issue.record("started with a bad configuration")
        } catch {
            #expect(error.description.hasPrefix("simulator: bad configuration: "), "\(error)")
            #expect(error.description.contains(message), "\(error)")
            #expect(!error.description.contains("\n"))
        }
    }
}
