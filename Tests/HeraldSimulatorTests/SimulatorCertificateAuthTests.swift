import Foundation
import HeraldCore
import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// Certificate authentication (`--client-ca`): NIOSSL verifies the client certificate in the
/// handshake; herald's client presents one through libcurl (CURLOPT_SSLCERT/SSLKEY).
@Suite(.serialized) struct SimulatorCertificateAuthTests {
    let dir = TemporaryDirectory("sim-cert")

    func identity(from ca: SimulatorCertificateAuthority, name: String) throws -> ClientIdentity {
        let issued = try ca.issueClientCertificate(commonName: name)
        let key = try dir.write("\(name).key", issued.privateKeyPEM)
        chmod(key, 0o600)
        return ClientIdentity(certificatePEMPath: try dir.write("\(name).pem", issued.certificatePEM), privateKeyPEMPath: key)
    }

    @Test func aCertificateFromTheClientCAIsTheCredential() throws {
        let ca = try SimulatorCertificateAuthority(commonName: "test client CA")
        let h = try SimulatorHarness(clientCA: try dir.write("client-ca.pem", ca.certificatePEM))
        defer { h.shutdown() }
        let conn = try h.connection(identity: try identity(from: ca, name: "app"))
        let results = try conn.send(Push.many(5), authorization: nil)
        #expect(results.allSatisfy { $0.outcome.status == 200 }, "\(results.map(\.outcome))")
        // Apple ignores authorization on a certificate connection: even a forged token passes.
        #expect(try conn.send([Push.request(6)], authorization: "forged.token.here")[0].outcome.status == 200)
        #expect(h.sim.requestLog.entries().allSatisfy { $0.jwtKid == nil })
        // The rest of the validation still applies.
        #expect(try conn.send([Push.request(7) { $0.topic = "com.example.other" }], authorization: nil)[0].outcome.reason == "TopicDisallowed")
    }

    @Test func aCertificateFromAnotherCAFailsTheHandshake() throws {
        let ca = try SimulatorCertificateAuthority(commonName: "test client CA")
        let stranger = try SimulatorCertificateAuthority(commonName: "someone else's CA")
        let h = try SimulatorHarness(clientCA: try dir.write("client-ca.pem", ca.certificatePEM))
        defer { h.shutdown() }
        let outcome = try h.connection(identity: try identity(from: stranger, name: "intruder")).send([Push.request(1)], authorization: nil)[0].outcome
        #expect(outcome.isTransportFailure, "\(outcome)")
        #expect(h.sim.requestLog.count == 0 && h.sim.requestLog.stats().connections == 0)
    }

    @Test func noCertificateFailsTheHandshake() throws {
        let ca = try SimulatorCertificateAuthority()
        let h = try SimulatorHarness(clientCA: try dir.write("client-ca.pem", ca.certificatePEM))
        defer { h.shutdown() }
        let outcome = try h.send(Push.request(1), authorization: try h.jwt())
        #expect(outcome.isTransportFailure, "\(outcome)")
        #expect(h.sim.requestLog.count == 0)
    }

    @Test func anUnreadableClientCAIsAnOperatorError() throws {
        var config = SimulatorConfiguration(authentication: .clientCertificate(caPEMPath: dir.file("missing.pem")))
        config.port = 0
        #expect(throws: SimulatorError.unreadableFile(role: "client CA", path: dir.file("missing.pem"), detail: "no such file")) {
            try APNsSimulator.start(config)
        }
        let notPEM = try dir.write("not.pem", "hello")
        #expect(throws: SimulatorError.self) { try APNsSimulator.start(SimulatorConfiguration(authentication: .clientCertificate(caPEMPath: notPEM))) }
    }
}
