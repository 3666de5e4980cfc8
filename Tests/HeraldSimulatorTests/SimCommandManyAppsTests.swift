import Foundation
import HeraldCore
import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// `herald sim` with several credentials (`--token-key`, `--client-ca` with `--client-ca-bundle`),
/// run as its own process the way end-to-end tests and scripts start it.
@Suite(.serialized) struct SimCommandManyAppsTests {
    let dir = TemporaryDirectory("sim-cmd-apps")
    let herald = Herald()

    func connection(_ sim: SimulatorProcess, identity: ClientIdentity? = nil) throws -> TestConnection {
        try TestConnection(settings: ConnectionSettings(baseURL: sim.url, trust: .caPEM(try String(contentsOfFile: sim.caFile, encoding: .utf8)),
                                                        identity: identity))
    }

    func token(_ key: TestKey, team: String, kid: String) throws -> String {
        try ProviderToken(privateKeyPEM: key.privateKeyPEM, source: "test", teamId: team, keyId: kid).current()
    }

    @Test func twoTeamsAndCertificatesShareOneSimulator() throws {
        let acme = TestKey(), partner = TestKey()
        let ca = try SimulatorCertificateAuthority(commonName: "apps client CA")
        // One key given as its .p8 private key, the other as a public key PEM.
        let p8 = try dir.write("AuthKey_ACMEKEY001.p8", acme.privateKeyPEM)
        let arguments = ["--token-key", "ACMETEAM01:ACMEKEY001:\(p8):com.acme.app,com.acme.ipad"]
            + (try SimulatorProcess.tokenKeyArguments(partner, teamId: "PARTNER001", keyId: "PARTKEY001", bundleIds: ["com.partner.app"], in: dir))
            + (try SimulatorProcess.clientCAArguments(ca, bundleIds: ["com.cert.app"], in: dir))
        let sim = try SimulatorProcess(in: dir, bundleId: nil, arguments: arguments)
        defer { sim.stop() }
        func send(_ topic: String, _ authorization: String?, identity: ClientIdentity? = nil) throws -> PushOutcome {
            try connection(sim, identity: identity).send([Push.request(1) { $0.topic = topic }], authorization: authorization)[0].outcome
        }
        let acmeToken = try token(acme, team: "ACMETEAM01", kid: "ACMEKEY001")
        let partnerToken = try token(partner, team: "PARTNER001", kid: "PARTKEY001")
        #expect(try send("com.acme.ipad", acmeToken).status == 200)
        #expect(try send("com.partner.app", partnerToken).status == 200)
        #expect(try send("com.partner.app", acmeToken).reason == "TopicDisallowed")
        #expect(try send("com.acme.app", try token(acme, team: "ACMETEAM01", kid: "NOSUCHKEY1")).reason == "InvalidProviderToken")
        let issued = try ca.issueClientCertificate(commonName: "cert-app")
        let keyPath = try dir.write("cert-app.key", issued.privateKeyPEM)
        chmod(keyPath, 0o600)
        let identity = ClientIdentity(certificatePEMPath: try dir.write("cert-app.pem", issued.certificatePEM), privateKeyPEMPath: keyPath)
        #expect(try send("com.cert.app", nil, identity: identity).status == 200)
        #expect(try send("com.acme.app", nil, identity: identity).reason == "TopicDisallowed")

        #expect(sim.stop() == 0)
        let lines = try sim.entries().filter { $0["stats"] == nil }
        try #require(lines.count == 6)
        let credentials = lines.map { [$0["auth"] as? String ?? "-", $0["jwt_iss"] as? String ?? $0["client_cn"] as? String ?? "-", $0["topic"] as? String ?? "-"] }
        #expect(credentials == [["token", "ACMETEAM01", "com.acme.ipad"], ["token", "PARTNER001", "com.partner.app"],
                                ["token", "ACMETEAM01", "com.partner.app"], ["-", "ACMETEAM01", "com.acme.app"],
                                ["certificate", "cert-app", "com.cert.app"], ["certificate", "cert-app", "com.acme.app"]])
    }

    @Test func malformedCredentialFlagsAreOneLineNamingTheFlag() throws {
        let key = TestKey()
        let pub = try dir.write("pub.pem", key.publicKeyPEM)
        let garbage = try dir.write("garbage.pem", "not a key")
        let ca = try dir.write("ca.pem", try SimulatorCertificateAuthority().certificatePEM)
        let cases: [([String], String)] = [
            (["--token-key", "TEAM1:KEY1"], "--token-key must be TEAM:KEY:path.pem[:bundle[,bundle…]], not \"TEAM1:KEY1\""),
            (["--token-key", "TEAM1::\(pub)"], "--token-key must be TEAM:KEY:path.pem"),
            (["--token-key", "TEAM1:KEY1:\(pub):a:b"], "--token-key must be TEAM:KEY:path.pem"),
            (["--token-key", "TEAM 1:KEY1:\(pub)"], "--token-key TEAM 1:KEY1:\(pub): the team id and the key id are letters and digits"),
            (["--token-key", "TEAM1:KEY1:/nonexistent/key.p8"], "cannot read --token-key TEAM1:KEY1 file /nonexistent/key.p8: no such file"),
            (["--token-key", "TEAM1:KEY1:\(garbage)"], "--token-key TEAM1:KEY1: \(garbage) is neither a .p8 private key nor a P-256 public key PEM"),
            (["--token-key", "TEAM1:KEY1:\(pub):com.a,,com.b"], "--token-key TEAM1:KEY1: \"\" is not a bundle id"),
            (["--token-key", "TEAM1:KEY1:\(pub)", "--token-key", "TEAM2:KEY1:\(pub)"], "--token-key: key id KEY1 is given twice"),
            (["--token-key", "TEAM1:KEY1:\(pub)", "--client-ca-bundle", "com.a"], "--client-ca-bundle needs --client-ca"),
            (["--token-key", "TEAM1:KEY1:\(pub)", "--client-ca", ca, "--client-ca-bundle", "com a"], "--client-ca-bundle: \"com a\" is not a bundle id"),
            (["--team-id", "TEAM1", "--key-id", "KEY1", "--auth-public-key", pub, "--client-ca", ca],
             "--client-ca (certificate authentication) excludes --team-id, --key-id, --auth-key and --auth-public-key: give the key as --token-key TEAM:KEY:path"),
        ]
        for (flags, message) in cases {
            let r = try herald(["sim", "--port", "0"] + flags)
            #expect(r.status == 2, "\(flags): \(r.stderr)")
            #expect(r.stdout.isEmpty, "\(flags): nothing listened")
            #expect(r.stderr.hasPrefix("herald: error: ") && r.stderr.contains(message), "\(flags): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(flags): one line")
            #expect(!r.stderr.contains("BEGIN"), "no key material in errors")
        }
    }

    @Test func helpDocumentsTheCredentialFlags() throws {
        let r = try herald(["sim", "--help"])
        #expect(r.status == 0)
        for flag in ["--token-key <TEAM:KEY:path.pem[:bundle[,bundle…]]>", "--client-ca-bundle <bundle>", "--client-ca <ca.pem>"] {
            #expect(r.stdout.contains(flag), "\(flag)")
        }
        #expect(r.stdout.contains("TopicDisallowed") && r.stdout.contains("UnrelatedKeyIdInToken"))
    }
}
