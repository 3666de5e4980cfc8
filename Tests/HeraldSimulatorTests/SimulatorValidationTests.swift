import Crypto
import Foundation
import HeraldCore
@testable import HeraldSimulator
import Testing

/// Pure tests of the validator's clock-dependent rules and byte-level helpers: no sockets, a
/// fixed `now`. JWTs are made here with swift-crypto, independently of herald's own signer.
@Suite struct SimulatorValidationTests {
    static let teamId = "TEAM123456"
    static let keyId = "KEY1234567"
    static let token = String(repeating: "ab", count: 32)
    let key = P256.Signing.PrivateKey()
    let now = Date(timeIntervalSince1970: 1_750_000_000)

    func validator(_ configure: (inout SimulatorConfiguration) -> Void = { _ in }) throws -> RequestValidator {
        var c = SimulatorConfiguration(teamId: Self.teamId, keyId: Self.keyId, publicKeyPEM: key.publicKey.pemRepresentation)
        c.bundleId = "com.example.app"
        configure(&c)
        return try RequestValidator(configuration: c)
    }

    func jwt(iat: Int) throws -> String {
        try HandMadeJWT.make(key: key, header: #"{"alg":"ES256","kid":"\#(Self.keyId)"}"#, claims: #"{"iss":"\#(Self.teamId)","iat":\#(iat)}"#)
    }

    func request(jwt: String?, body: String = #"{"aps":{"alert":"hi"}}"#) -> SimulatorRequest {
        var fields: [(name: String, value: String)] = [("apns-topic", "com.example.app")]
        if let jwt { fields.append(("authorization", "bearer " + jwt)) }
        return SimulatorRequest(method: "POST", path: "/3/device/" + Self.token, headers: fields, body: Array(body.utf8))
    }

    var t: Int { Int(now.timeIntervalSince1970) }

    @Test func theMaximumAgeIsInclusive() throws {
        let v = try validator()
        #expect(v.validate(request(jwt: try jwt(iat: t - 3600)), on: SimulatorConnection(id: 1), now: now).status == 200)
        let old = v.validate(request(jwt: try jwt(iat: t - 3601)), on: SimulatorConnection(id: 1), now: now)
        #expect(old.status == 403 && old.reason == "ExpiredProviderToken")
        #expect(old.providerToken?.iat == t - 3601, "the claims are logged")
        #expect(!old.authenticated)
    }

    @Test func theUpdateIntervalCountsFromTheLastAdoption() throws {
        let v = try validator()
        let connection = SimulatorConnection(id: 1)
        let a = try jwt(iat: t - 10), b = try jwt(iat: t - 5), c = try jwt(iat: t - 1)
        #expect(v.validate(request(jwt: a), on: connection, now: now).status == 200)
        let tooSoon = v.validate(request(jwt: b), on: connection, now: now.addingTimeInterval(1199))
        #expect(tooSoon.status == 429 && tooSoon.reason == "TooManyProviderTokenUpdates")
        #expect(v.validate(request(jwt: b), on: connection, now: now.addingTimeInterval(1200)).status == 200)
        // b was adopted at now+1200: c at now+2399 is too soon, a (no longer in force) too.
        #expect(v.validate(request(jwt: c), on: connection, now: now.addingTimeInterval(2399)).reason == "TooManyProviderTokenUpdates")
        #expect(v.validate(request(jwt: b), on: connection, now: now.addingTimeInterval(2399)).status == 200)
    }

    @Test func certificateModeIgnoresAuthorization() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ca-\(UUID().uuidString).pem").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let v = try validator { $0.authentication = .clientCertificate(caPEMPath: dir) }
        let answer = v.validate(request(jwt: "garbage"), on: SimulatorConnection(id: 1), now: now)
        #expect(answer.status == 200 && answer.authenticated && answer.providerToken == nil)
        // Apple: with a certificate the topic defaults to the bundle id.
        var noTopic = request(jwt: nil)
        noTopic.headers.removeAll { $0.name == "apns-topic" }
        #expect(v.validate(noTopic, on: SimulatorConnection(id: 1), now: now).status == 200)
    }

    @Test func unregisteredAnswersCarryTheMillisecondTimestamp() throws {
        var c = SimulatorConfiguration(teamId: Self.teamId, keyId: Self.keyId, publicKeyPEM: key.publicKey.pemRepresentation)
        c.unregisteredPrefixes = ["dead"]
        let behavior = try APNsBehavior(configuration: c)
        var r = request(jwt: try jwt(iat: t))
        r.path = "/3/device/dead" + Self.token.dropFirst(4)
        let v = behavior.respond(to: r, on: SimulatorConnection(id: 1), now: now)
        #expect(v.status == 410 && v.timestamp == t * 1000)
        #expect(v.body.map { String(decoding: $0, as: UTF8.self) } == #"{"reason":"Unregistered","timestamp":1750000000000}"#)
    }

    @Test func errorBodyIsReasonOnly() {
        let v = SimulatorVerdict.rejected("BadTopic", token: nil, providerToken: nil)
        #expect(v.status == 400)
        #expect(v.body.map { String(decoding: $0, as: UTF8.self) } == #"{"reason":"BadTopic"}"#)
        #expect(SimulatorVerdict.accepted(token: nil, providerToken: nil).body == nil)
        #expect(SimulatorVerdict.rejected("SomethingNew", token: nil, providerToken: nil).status == 400, "unknown reasons are 400")
        #expect(SimulatorVerdict.rejected(RequestValidator.badPayload, token: nil, providerToken: nil).status == 400)
    }

    @Test func canonicalUUID() {
        #expect(RequestValidator.isCanonicalUUID("00000000-0000-0000-0000-00000000abcd"))
        #expect(!RequestValidator.isCanonicalUUID("00000000000000000000000000000000abcd"))
        #expect(!RequestValidator.isCanonicalUUID("00000000-0000-0000-0000-00000000ABCD"))
        #expect(!RequestValidator.isCanonicalUUID("00000000-0000-0000-0000-00000000abcde"))
        #expect(!RequestValidator.isCanonicalUUID(""))
    }

    @Test(arguments: [
        (#"{"aps":{}}"#, true),
        (#" { "x" : [1, -2.5e+3, true, false, null, "é\u00e9\"\\"], "aps" : { "alert" : { "body" : "hi" } } } "#, true),
        (#"{"\u0061ps":{}}"#, true),
        (#"{"aps":{},"aps":"x"}"#, false),      // the last duplicate wins, as in most parsers
        (#"{"aps":[]}"#, false),
        (#"{"aps":"x"}"#, false),
        (#"{"apsx":{}}"#, false),
        (#"{"x":{"aps":{}}}"#, false),
        (#"[{"aps":{}}]"#, false),
        (#"{"aps":{}"#, false),
        (#"{"aps":{}} x"#, false),
        (#"{"aps":{"a":01}}"#, false),
        (#"{"aps":{"a":1.}}"#, false),
        (#"{"aps":{"a":"\x"}}"#, false),
        ("{\"aps\":{\"a\":\"\u{01}\"}}", false),
        (#"{"aps":{},}"#, false),
        (#"{"aps":{"a":tru}}"#, false),
        ("", false),
        (String(repeating: "[", count: 100) + String(repeating: "]", count: 100), false),
    ])
    func jsonShape(_ text: String, _ expected: Bool) {
        #expect(JSONShape.isObjectWithApsDictionary(Array(text.utf8)) == expected, "\(text)")
    }

    @Test func jsonShapeAgreesWithFoundationOnDeepButLegalNesting() throws {
        let nested = #"{"aps":{},"x":"# + String(repeating: "[", count: 60) + String(repeating: "]", count: 60) + "}"
        #expect(JSONShape.isObjectWithApsDictionary(Array(nested.utf8)))
        let tooDeep = #"{"aps":{},"x":"# + String(repeating: "[", count: 70) + String(repeating: "]", count: 70) + "}"
        #expect(!JSONShape.isObjectWithApsDictionary(Array(tooDeep.utf8)), "nesting is capped at 64")
    }
}
