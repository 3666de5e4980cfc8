import Crypto
import Foundation
import HeraldCore
import HeraldSimulator
import Testing

/// Pure tests of the simulator's provider-token check and request validation: no sockets, no
/// HTTP/2 client. JWTs are made here with swift-crypto, independently of herald's own signer.
@Suite struct SimulatorValidationTests {
    static let teamId = "TEAM123456"
    static let keyId = "KEY1234567"
    static let token = String(repeating: "ab", count: 32)
    let key = P256.Signing.PrivateKey()
    let now = Date(timeIntervalSince1970: 1_750_000_000)

    var configuration: SimulatorConfiguration {
        var c = SimulatorConfiguration(teamId: Self.teamId, keyId: Self.keyId, publicKeyPEM: key.publicKey.pemRepresentation)
        c.bundleId = "com.example.app"
        c.unregisteredPrefixes = ["dead"]
        c.badTokenPrefixes = ["bad0"]
        return c
    }

    static func base64url(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A provider token as Apple describes it, signed with `key`.
    func jwt(kid: String = keyId, iss: String = teamId, iat: Int? = nil, alg: String = "ES256",
             signer: P256.Signing.PrivateKey? = nil) throws -> String {
        let header = Self.base64url(Data(#"{"alg":"\#(alg)","kid":"\#(kid)"}"#.utf8))
        let claims = Self.base64url(Data(#"{"iss":"\#(iss)","iat":\#(iat ?? Int(now.timeIntervalSince1970) - 60)}"#.utf8))
        let input = header + "." + claims
        let signature = try (signer ?? key).signature(for: Data(input.utf8))
        return input + "." + Self.base64url(signature.rawRepresentation)
    }

    func request(method: String = "POST", path: String? = nil, jwt: String?, headers: [(String, String)] = [],
                 topic: String? = "com.example.app", body: String = #"{"aps":{"alert":"hi"}}"#) -> SimulatorRequest {
        var fields: [(name: String, value: String)] = []
        if let jwt { fields.append(("authorization", "bearer " + jwt)) }
        if let topic { fields.append(("apns-topic", topic)) }
        fields += headers.map { (name: $0.0, value: $0.1) }
        return SimulatorRequest(method: method, path: path ?? "/3/device/" + Self.token, headers: fields, body: Array(body.utf8))
    }

    func verdict(_ request: SimulatorRequest) throws -> SimulatorVerdict {
        try RequestValidator(configuration: configuration).validate(request, now: now)
    }

    // MARK: provider token

    @Test func validProviderTokenVerifies() throws {
        let verifier = try ProviderTokenVerifier(keyId: Self.keyId, teamId: Self.teamId, publicKeyPEM: key.publicKey.pemRepresentation)
        let iat = Int(now.timeIntervalSince1970)
        #expect(verifier.verify(try jwt(iat: iat)) == .valid(ProviderTokenClaims(kid: Self.keyId, iss: Self.teamId, iat: iat)))
    }

    @Test func forgedSignatureIsInvalid() throws {
        let forged = try jwt(signer: P256.Signing.PrivateKey())
        let v = try verdict(request(jwt: forged))
        #expect(v.status == 403 && v.reason == "InvalidProviderToken")
        #expect(v.providerToken?.kid == Self.keyId)   // still logged, for the operator
    }

    @Test func wrongKidIsInvalid() throws {
        let v = try verdict(request(jwt: try jwt(kid: "OTHERKEY00")))
        #expect(v.status == 403 && v.reason == "InvalidProviderToken")
    }

    @Test func wrongIssIsInvalid() throws {
        let v = try verdict(request(jwt: try jwt(iss: "OTHERTEAM0")))
        #expect(v.status == 403 && v.reason == "InvalidProviderToken")
    }

    @Test func otherAlgorithmIsInvalid() throws {
        let v = try verdict(request(jwt: try jwt(alg: "HS256")))
        #expect(v.reason == "InvalidProviderToken")
    }

    @Test func tokenOlderThanAnHourIsExpired() throws {
        let old = try jwt(iat: Int(now.timeIntervalSince1970) - 3601)
        let v = try verdict(request(jwt: old))
        #expect(v.status == 403 && v.reason == "ExpiredProviderToken")
        let fresh = try jwt(iat: Int(now.timeIntervalSince1970) - 3599)
        #expect(try verdict(request(jwt: fresh)).status == 200)
    }

    @Test(arguments: ["", "bearer", "bearer ", "bearer a.b", "bearer a.b.c", "basic abc", "bearer !!.??.**"])
    func malformedAuthorization(_ value: String) throws {
        var r = request(jwt: nil)
        r.headers.append(("authorization", value))
        let v = try verdict(r)
        #expect(v.status == 403)
        #expect(v.reason == (value.isEmpty ? "MissingProviderToken" : "InvalidProviderToken"))
    }

    @Test func derSignatureIsRejected() throws {
        // JWTs carry raw R‖S; a DER-encoded signature (what some libraries emit) must not pass.
        let parts = try jwt().split(separator: ".")
        let input = parts[0] + "." + parts[1]
        let der = try key.signature(for: Data(input.utf8)).derRepresentation
        let v = try verdict(request(jwt: input + "." + Self.base64url(der)))
        #expect(v.reason == "InvalidProviderToken")
    }

    @Test func verdictIsCachedPerConnection() throws {
        let connection = SimulatorConnection(id: 1)
        let token = try jwt()
        var calls = 0
        for _ in 0..<5 {
            _ = connection.providerTokenVerdict(for: token) { _ in calls += 1; return .invalid(nil, why: "test") }
        }
        #expect(calls == 1)
        let validator = try RequestValidator(configuration: configuration)
        #expect(validator.respond(to: request(jwt: token), on: SimulatorConnection(id: 2), now: now).status == 200)
    }

    @Test func badPublicKeyIsAnOperatorError() {
        var c = configuration
        c.publicKeyPEM = "not a key"
        #expect(throws: SimulatorError.self) { try RequestValidator(configuration: c) }
        do { _ = try RequestValidator(configuration: c) } catch {
            #expect(error.description.hasPrefix("simulator: provider-token public key is not a P-256 public key PEM"))
        }
    }
}

// MARK: request rules

extension SimulatorValidationTests {
    /// (request, expected status, expected reason) for every rule; the status must also be the
    /// one `APNsReasonTable` gives the reason.
    func ruleCases() throws -> [(String, SimulatorRequest, Int, String?)] {
        let t = try jwt()
        let long = String(repeating: "x", count: 4090)
        return [
            ("accepted", request(jwt: t), 200, nil),
            ("wrong path", request(path: "/2/device/" + Self.token, jwt: t), 404, "BadPath"),
            ("empty token", request(path: "/3/device/", jwt: t), 400, "MissingDeviceToken"),
            ("GET", request(method: "GET", jwt: t), 405, "MethodNotAllowed"),
            ("no authorization", request(jwt: nil), 403, "MissingProviderToken"),
            ("uppercase token", request(path: "/3/device/" + Self.token.uppercased(), jwt: t), 400, "BadDeviceToken"),
            ("short token", request(path: "/3/device/abcd", jwt: t), 400, "BadDeviceToken"),
            ("non-hex token", request(path: "/3/device/" + String(repeating: "zz", count: 32), jwt: t), 400, "BadDeviceToken"),
            ("no topic", request(jwt: t, topic: nil), 400, "MissingTopic"),
            ("other topic", request(jwt: t, topic: "com.example.other"), 400, "BadTopic"),
            ("voip without suffix", request(jwt: t, headers: [("apns-push-type", "voip")]), 400, "BadTopic"),
            ("voip with suffix", request(jwt: t, headers: [("apns-push-type", "voip")], topic: "com.example.app.voip"), 200, nil),
            ("unknown push type", request(jwt: t, headers: [("apns-push-type", "banner")]), 400, "InvalidPushType"),
            ("priority 7", request(jwt: t, headers: [("apns-priority", "7")]), 400, "BadPriority"),
            ("background at 10", request(jwt: t, headers: [("apns-push-type", "background"), ("apns-priority", "10")]), 400, "BadPriority"),
            ("background at 5", request(jwt: t, headers: [("apns-push-type", "background"), ("apns-priority", "5")]), 200, nil),
            ("uppercase apns-id", request(jwt: t, headers: [("apns-id", "123E4567-E89B-12D3-A456-426614174000")]), 400, "BadMessageId"),
            ("canonical apns-id", request(jwt: t, headers: [("apns-id", "123e4567-e89b-12d3-a456-426614174000")]), 200, nil),
            ("bad expiration", request(jwt: t, headers: [("apns-expiration", "soon")]), 400, "BadExpirationDate"),
            ("collapse id 65 bytes", request(jwt: t, headers: [("apns-collapse-id", String(repeating: "c", count: 65))]), 400, "BadCollapseId"),
            ("collapse id 64 bytes", request(jwt: t, headers: [("apns-collapse-id", String(repeating: "c", count: 64))]), 200, nil),
            ("duplicate topic", request(jwt: t, headers: [("apns-topic", "com.example.app")]), 400, "DuplicateHeaders"),
            ("empty body", request(jwt: t, body: ""), 400, "PayloadEmpty"),
            ("4097 bytes", request(jwt: t, body: #"{"aps":{},"x":"\#(long)"}"#), 413, "PayloadTooLarge"),
            ("4097 bytes voip", request(jwt: t, headers: [("apns-push-type", "voip")], topic: "com.example.app.voip",
                                        body: #"{"aps":{},"x":"\#(long)"}"#), 200, nil),
            ("not JSON", request(jwt: t, body: "hello"), 400, "BadPayload"),
            ("no aps", request(jwt: t, body: #"{"alert":"hi"}"#), 400, "BadPayload"),
            ("aps not an object", request(jwt: t, body: #"{"aps":"hi"}"#), 400, "BadPayload"),
            ("bad token prefix", request(path: "/3/device/bad0" + Self.token.dropFirst(4), jwt: t), 400, "BadDeviceToken"),
        ]
    }

    @Test func everyRuleAnswersWithItsReason() throws {
        for (name, request, status, reason) in try ruleCases() {
            let v = try verdict(request)
            #expect(v.status == status, "\(name)")
            #expect(v.reason?.rawValue == reason, "\(name)")
            if let reason, let entry = APNsReasonTable.entry(for: APNsReason(reason)) {
                #expect(entry.status == v.status, "\(name): status must come from APNsReasonTable")
            }
            #expect(v.timestamp == nil, "\(name): only 410 carries a timestamp")
        }
    }

    @Test func unregisteredPrefixAnswers410WithTimestamp() throws {
        let v = try verdict(request(path: "/3/device/dead" + Self.token.dropFirst(4), jwt: try jwt()))
        #expect(v.status == 410 && v.reason == "Unregistered")
        #expect(v.timestamp == Int(now.timeIntervalSince1970 * 1000))
        #expect(v.body.map { String(decoding: $0, as: UTF8.self) } == #"{"reason":"Unregistered","timestamp":1750000000000}"#)
    }

    @Test func firstFailingCheckDecides() throws {
        // Wrong method and no token at all: the method is checked first.
        #expect(try verdict(request(method: "PUT", jwt: nil)).reason == "MethodNotAllowed")
        // Bad provider token and bad device token: the provider token is checked first.
        #expect(try verdict(request(path: "/3/device/xyz", jwt: nil)).reason == "MissingProviderToken")
    }

    @Test func errorBodyIsReasonOnly() {
        let v = SimulatorVerdict.rejected("BadTopic", token: nil, providerToken: nil)
        #expect(v.status == 400)
        #expect(v.body.map { String(decoding: $0, as: UTF8.self) } == #"{"reason":"BadTopic"}"#)
        #expect(SimulatorVerdict.accepted(token: nil, providerToken: nil).body == nil)
    }

    @Test func canonicalUUID() {
        #expect(RequestValidator.isCanonicalUUID("00000000-0000-0000-0000-00000000abcd"))
        #expect(!RequestValidator.isCanonicalUUID("00000000000000000000000000000000abcd"))
        #expect(!RequestValidator.isCanonicalUUID("00000000-0000-0000-0000-00000000ABCD"))
        #expect(!RequestValidator.isCanonicalUUID(""))
    }
}
