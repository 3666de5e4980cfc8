import Crypto
import Foundation
import HeraldCore
import HeraldSimulator
import Testing

/// The request log, key helpers and the listener's lifecycle (sockets, but no HTTP/2 client:
/// herald's own client exercises the protocol in the integration tests).
@Suite struct SimulatorRequestLogTests {
    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    func entry(status: Int, reason: APNsReason?) -> SimulatorRequestLog.Entry {
        let jwt = "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJUIn0.c2VjcmV0LXNpZ25hdHVyZQ"
        let request = SimulatorRequest(method: "POST", path: "/3/device/abcdef0123456789",
                                       headers: [("authorization", "bearer " + jwt), ("apns-topic", "com.example.app"),
                                                 ("user-agent", "test")],
                                       body: Array(#"{"aps":{}}"#.utf8))
        let verdict = SimulatorVerdict(status: status, reason: reason, token: "abcdef0123456789",
                                       providerToken: ProviderTokenClaims(kid: "KID", iss: "TEAM", iat: 42))
        return SimulatorRequestLog.Entry(connection: 1, stream: 3, request: request, verdict: verdict,
                                         apnsId: "00000000-0000-0000-0000-000000000001")
    }

    @Test func entryRedactsTheProviderToken() {
        let e = entry(status: 200, reason: nil)
        #expect(e.headers == ["apns-topic": "com.example.app", "authorization": "bearer kid=KID iss=TEAM iat=42"])
        #expect(e.jwtKid == "KID" && e.jwtIss == "TEAM" && e.jwtIat == 42)
    }

    @Test func logCountsAndWritesOneNDJSONLinePerRequest() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("requests.ndjson").path
        let log = try SimulatorRequestLog(path: path)
        log.append(entry(status: 200, reason: nil))
        log.append(entry(status: 410, reason: "Unregistered"))
        log.append(entry(status: 200, reason: nil))
        // Flushed per line: readable before close.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        log.close()
        #expect(log.count == 3)
        #expect(log.statusCounts() == [200: 2, 410: 1])
        #expect(log.entries().map(\.status) == [200, 410, 200])
        let lines = text.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(!text.contains("c2VjcmV0"), "the JWT must never reach the log file")
        let first = try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any]
        #expect(first?["status"] as? Int == 410)
        #expect(first?["reason"] as? String == "Unregistered")
        #expect(first?["jwt_kid"] as? String == "KID")
        #expect((first?["headers"] as? [String: String])?["authorization"] == "bearer kid=KID iss=TEAM iat=42")
    }

    @Test func unwritableLogPathIsAnOperatorError() {
        #expect(throws: SimulatorError.self) { try SimulatorRequestLog(path: "/nonexistent-dir/requests.ndjson") }
    }

    @Test func credentialsRoundTrip() throws {
        let pair = SimulatorCredentials.generate()
        #expect(pair.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(pair.publicKeyPEM.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        #expect(try SimulatorCredentials.publicKeyPEM(fromPrivateKeyPEM: pair.privateKeyPEM) == pair.publicKeyPEM)
        #expect(throws: SimulatorError.self) { try SimulatorCredentials.publicKeyPEM(fromPrivateKeyPEM: "garbage") }
    }

    @Test func startsOnAnEphemeralPortAndShutsDownTwice() throws {
        let pair = SimulatorCredentials.generate()
        let simulator = try APNsSimulator.start(SimulatorConfiguration(teamId: "T", keyId: "K", publicKeyPEM: pair.publicKeyPEM))
        #expect(simulator.port > 0)
        #expect(simulator.caCertificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(simulator.requestLog.count == 0)
        try simulator.shutdown()
        try simulator.shutdown()
    }

    @Test func portInUseIsAnOperatorError() throws {
        let pair = SimulatorCredentials.generate()
        let first = try APNsSimulator.start(SimulatorConfiguration(teamId: "T", keyId: "K", publicKeyPEM: pair.publicKeyPEM))
        defer { try? first.shutdown() }
        var second = SimulatorConfiguration(teamId: "T", keyId: "K", publicKeyPEM: pair.publicKeyPEM)
        second.port = first.port
        do {
            let unexpected = try APNsSimulator.start(second)
            try? unexpected.shutdown()
            Issue.record("second bind on \(first.port) succeeded")
        } catch {
            #expect(error.description == "simulator: cannot bind 127.0.0.1:\(first.port): address in use")
        }
    }

    @Test func missingCertificateFileIsAnOperatorError() throws {
        var c = SimulatorConfiguration(teamId: "T", keyId: "K", publicKeyPEM: SimulatorCredentials.generate().publicKeyPEM)
        c.tls = .files(certificatePEMPath: "/nonexistent/cert.pem", privateKeyPEMPath: "/nonexistent/key.pem")
        do {
            let unexpected = try APNsSimulator.start(c)
            try? unexpected.shutdown()
            Issue.record("start with missing files succeeded")
        } catch {
            #expect(error.description == "simulator: cannot read TLS certificate file /nonexistent/cert.pem: no such file")
        }
    }
}
