import Foundation
import HeraldCore
import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// One simulator standing for Apple when one run sends for several apps: two teams, each with its
/// own key and its own apps, and certificate clients of a third app, all on one port, over real
/// TLS with herald's own HTTP/2 client.
@Suite(.serialized) struct SimulatorManyAppsTests {
    static let acme = (team: "ACMETEAM01", key: "ACMEKEY001", apps: ["com.acme.app", "com.acme.ipad"])
    static let partner = (team: "PARTNER001", key: "PARTKEY001", apps: ["com.partner.app"])
    static let certificateApp = "com.cert.app"

    let dir = TemporaryDirectory("sim-apps")
    let acmeKey = TestKey()
    let partnerKey = TestKey()
    let ca: SimulatorCertificateAuthority
    let h: SimulatorHarness

    init() throws {
        let ca = try SimulatorCertificateAuthority(commonName: "apps client CA")
        let caPath = try dir.write("client-ca.pem", ca.certificatePEM)
        let keys = [SimulatorTokenKey(teamId: Self.acme.team, keyId: Self.acme.key, publicKeyPEM: acmeKey.publicKeyPEM, bundleIds: Self.acme.apps),
                    SimulatorTokenKey(teamId: Self.partner.team, keyId: Self.partner.key, publicKeyPEM: partnerKey.publicKeyPEM,
                                      bundleIds: Self.partner.apps)]
        let log = dir.file("requests.ndjson")
        h = try SimulatorHarness {
            $0 = SimulatorConfiguration(tokenKeys: keys, clientCertificates: SimulatorClientCertificates(caPEMPath: caPath, bundleIds: [Self.certificateApp]))
            $0.logPath = log
        }
        self.ca = ca
    }

    func acmeToken() throws -> String { try h.jwt(key: acmeKey, teamId: Self.acme.team, keyId: Self.acme.key) }
    func partnerToken() throws -> String { try h.jwt(key: partnerKey, teamId: Self.partner.team, keyId: Self.partner.key) }

    /// A client certificate of `issuer` (the simulator's client CA by default) whose subject's
    /// common name is `name`, as PEM files.
    func identity(_ name: String, from issuer: SimulatorCertificateAuthority? = nil) throws -> ClientIdentity {
        let issued = try (issuer ?? ca).issueClientCertificate(commonName: name)
        let key = try dir.write("\(name).key", issued.privateKeyPEM)
        chmod(key, 0o600)
        return ClientIdentity(certificatePEMPath: try dir.write("\(name).pem", issued.certificatePEM), privateKeyPEMPath: key)
    }

    /// `topic`'s answer to `authorization` on a new token connection.
    func send(_ topic: String, _ authorization: String?, _ i: Int = 1, change: (inout PushRequest) -> Void = { _ in }) throws -> PushOutcome {
        try h.send(Push.request(i) { $0.topic = topic; change(&$0) }, authorization: authorization)
    }

    func logLines() throws -> [[String: Any]] {
        try String(contentsOfFile: dir.file("requests.ndjson"), encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test func eachCredentialSendsToItsOwnApps() throws {
        defer { h.shutdown() }
        // One token serves every app of its team.
        for (i, app) in Self.acme.apps.enumerated() { #expect(try send(app, try acmeToken(), i).status == 200, "\(app)") }
        #expect(try send("com.partner.app", try partnerToken()).status == 200)
        let certificate = try h.connection(identity: try identity("cert-app"))
        #expect(try certificate.send([Push.request(1) { $0.topic = Self.certificateApp }], authorization: nil)[0].outcome.status == 200)
        // The push type's suffix is still checked against the credential's app.
        let voip = try send("com.acme.app.voip", try acmeToken()) { $0.pushType = .voip; $0.priority = 5 }
        #expect(voip.status == 200, "\(voip)")
        let wrongSuffix = try send("com.acme.app.voip", try acmeToken())
        #expect(wrongSuffix.status == 400 && wrongSuffix.reason == "BadTopic", "\(wrongSuffix)")
    }

    @Test func anotherCredentialsTopicIsTopicDisallowed() throws {
        defer { h.shutdown() }
        for (topic, token) in [("com.partner.app", try acmeToken()), ("com.acme.app", try partnerToken()),
                               ("com.acme.ipad", try partnerToken()), (Self.certificateApp, try acmeToken())] {
            let outcome = try send(topic, token)
            #expect(outcome.status == 400 && outcome.reason == "TopicDisallowed", "\(topic): \(outcome)")
        }
        let certificate = try h.connection(identity: try identity("cert-app"))
        let foreign = try certificate.send([Push.request(1) { $0.topic = "com.acme.app" }], authorization: nil)[0].outcome
        #expect(foreign.status == 400 && foreign.reason == "TopicDisallowed", "\(foreign)")
    }

    @Test func aTokenNoKeyVerifiesIsInvalidProviderToken() throws {
        defer { h.shutdown() }
        let forged = [
            try h.jwt(key: acmeKey, teamId: Self.acme.team, keyId: "UNKNOWNKEY"),         // kid names no key
            try h.jwt(key: acmeKey, teamId: Self.acme.team, keyId: Self.partner.key),     // the other team's kid
            try h.jwt(key: partnerKey, teamId: Self.acme.team, keyId: Self.acme.key),     // signed by another team's key
        ]
        for token in forged {
            let outcome = try send("com.acme.app", token)
            #expect(outcome.status == 403 && outcome.reason == "InvalidProviderToken", "\(outcome)")
        }
    }

    @Test func tokenAndCertificateClientsShareThePort() throws {
        defer { h.shutdown() }
        func requests(_ topic: String) -> [PushRequest] { Push.many(3).map { r in var r = r; r.topic = topic; return r } }
        let token = try h.connection()
        let certificate = try h.connection(identity: try identity("cert-app"))
        // Each keeps its connection: the token one is still open while the certificate one sends.
        let jwt = try acmeToken()
        var results = try token.send(requests("com.acme.app"), authorization: jwt)
        results += try certificate.send(requests(Self.certificateApp), authorization: nil)
        results += try token.send(requests("com.acme.ipad"), authorization: jwt)
        #expect(results.allSatisfy { $0.outcome.status == 200 }, "\(results.map(\.outcome))")
        let stats = h.sim.requestLog.stats()
        #expect(stats.connections == 2 && stats.connectionsClosed == 0, "\(stats)")
        #expect(h.sim.requestLog.entries().map(\.auth) == Array(repeating: "token", count: 3) + Array(repeating: "certificate", count: 3)
                + Array(repeating: "token", count: 3))
        // The certificate is optional, not ignored: no certificate and no token is a token request
        // without its token, and a certificate from another CA still fails the handshake.
        let bare = try send("com.acme.app", nil)
        #expect(bare.status == 403 && bare.reason == "MissingProviderToken", "\(bare)")
        let stranger = try SimulatorCertificateAuthority(commonName: "someone else's CA")
        let intruder = try h.connection(identity: try identity("intruder", from: stranger)).send([Push.request(1)], authorization: nil)[0].outcome
        #expect(intruder.isTransportFailure, "\(intruder)")
    }

    @Test func aConnectionServesOneTeam() throws {
        defer { h.shutdown() }
        let connection = try h.connection()
        #expect(try connection.send([Push.request(1) { $0.topic = "com.acme.app" }], authorization: try acmeToken())[0].outcome.status == 200)
        let other = try connection.send([Push.request(2) { $0.topic = "com.partner.app" }], authorization: try partnerToken())[0].outcome
        #expect(other.status == 403 && other.reason == "UnrelatedKeyIdInToken", "\(other)")
        // On its own connection the other team's token is fine.
        #expect(try send("com.partner.app", try partnerToken(), 3).status == 200)
    }

    @Test func aCertificateWithOneAppDefaultsTheTopicToIt() throws {
        defer { h.shutdown() }
        let certificate = try h.connection(identity: try identity("cert-app"))
        #expect(try certificate.send([Push.request(1) { $0.topic = "" }], authorization: nil)[0].outcome.status == 200)
        let entry = try #require(h.sim.requestLog.entries().last)
        #expect(entry.topic == Self.certificateApp && entry.auth == "certificate")
    }

    @Test func aBroadcastToAnotherTeamsAppIsTopicMismatch() throws {
        defer { h.shutdown() }
        func broadcast(_ bundle: String, _ token: String) throws -> PushOutcome {
            try h.send(raw: RawRequest(method: nil, path: "/4/broadcasts/apps/\(bundle)",
                                       headerLines: ["authorization: bearer \(token)", "apns-push-type: liveactivity", "Expect:", "Accept:"],
                                       body: Array(#"{"aps":{}}"#.utf8)))
        }
        let foreign = try broadcast("com.partner.app", try acmeToken())
        #expect(foreign.status == 403 && foreign.reason == "TopicMismatch", "\(foreign)")
        // Its own app passes the app check and stops at the next one.
        #expect(try broadcast("com.acme.app", try acmeToken()).reason == "MissingChannelId")
    }

    @Test func theLogNamesEachRequestsCredentialAndTopic() throws {
        defer { h.shutdown() }
        _ = try send("com.acme.ipad", try acmeToken(), 1)
        _ = try send("com.acme.app", try partnerToken(), 2)
        _ = try send("com.acme.app", try h.jwt(key: acmeKey, teamId: Self.acme.team, keyId: "UNKNOWNKEY"), 3)
        _ = try h.connection(identity: try identity("cert-app")).send([Push.request(4) { $0.topic = Self.certificateApp }], authorization: nil)
        h.shutdown()
        let lines = try logLines()
        try #require(lines.count == 4)
        func string(_ line: [String: Any], _ key: String) -> String? { line[key] as? String }
        // A valid token: auth token, whose (kid, iss), for which topic.
        #expect(string(lines[0], "auth") == "token" && string(lines[0], "jwt_kid") == Self.acme.key && string(lines[0], "jwt_iss") == Self.acme.team)
        #expect(string(lines[0], "topic") == "com.acme.ipad" && lines[0]["client_cn"] is NSNull && lines[0]["status"] as? Int == 200)
        // A valid token for the wrong app still says whose it was.
        #expect(string(lines[1], "auth") == "token" && string(lines[1], "jwt_iss") == Self.partner.team && string(lines[1], "reason") == "TopicDisallowed")
        // A token no key verifies authenticated nothing.
        #expect(lines[2]["auth"] is NSNull && string(lines[2], "jwt_kid") == "UNKNOWNKEY" && string(lines[2], "reason") == "InvalidProviderToken")
        // A certificate: its subject's common name, no JWT.
        #expect(string(lines[3], "auth") == "certificate" && string(lines[3], "client_cn") == "cert-app" && lines[3]["jwt_kid"] is NSNull)
        #expect(string(lines[3], "topic") == Self.certificateApp && lines[3]["status"] as? Int == 200)
    }

    @Test func credentialsAreCheckedAtStart() throws {
        defer { h.shutdown() }
        let key = TestKey()
        let twice = SimulatorConfiguration(tokenKeys: [SimulatorTokenKey(teamId: "T1", keyId: "K1", publicKeyPEM: key.publicKeyPEM),
                                                       SimulatorTokenKey(teamId: "T2", keyId: "K1", publicKeyPEM: key.publicKeyPEM)])
        #expect(throws: SimulatorError.badConfiguration("key id K1 is given twice: a token's kid must name one key")) { try twice.validate() }
        #expect(throws: SimulatorError.self) { try SimulatorConfiguration(tokenKeys: []).validate() }
        let blank = SimulatorConfiguration(tokenKeys: [SimulatorTokenKey(teamId: "T1", keyId: "K1", publicKeyPEM: key.publicKeyPEM, bundleIds: [""])])
        #expect(throws: SimulatorError.self) { try blank.validate() }
    }
}
