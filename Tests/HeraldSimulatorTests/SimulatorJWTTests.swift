import Crypto
import Foundation
import HeraldCore
import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// The provider-token rules over the wire: signature, kid, iss, alg, age, and the per-connection
/// update interval. Tokens are signed by herald's own signer unless the shape needs a hand-made one.
@Suite(.serialized) struct SimulatorJWTTests {
    @Test func aValidTokenIsAcceptedAndLoggedAsKidIssIatOnly() throws {
        let h = try SimulatorHarness()
        defer { h.shutdown() }
        let issued = Date()
        let jwt = try h.jwt(issuedAt: issued)
        #expect(try h.send(Push.request(1), authorization: jwt).status == 200)
        let entry = try #require(h.sim.requestLog.entries().first)
        #expect(entry.jwtKid == TestKey.keyId && entry.jwtIss == TestKey.teamId && entry.jwtIat == Int(issued.timeIntervalSince1970))
        #expect(entry.headers["authorization"] == "bearer kid=\(TestKey.keyId) iss=\(TestKey.teamId) iat=\(Int(issued.timeIntervalSince1970))")
        let signature = String(jwt.split(separator: ".")[2])
        #expect(!"\(entry)".contains(signature), "the token's signature is never kept")
    }

    @Test func aForgedSignatureIsInvalid() throws {
        let h = try SimulatorHarness()
        defer { h.shutdown() }
        // Right kid and iss, signed by another key.
        let outcome = try h.send(Push.request(1), authorization: try h.jwt(key: TestKey()))
        #expect(outcome.status == 403 && outcome.reason == "InvalidProviderToken")
        #expect(h.sim.requestLog.entries().first?.jwtKid == TestKey.keyId, "what could be decoded is still logged")
    }

    @Test func aTamperedClaimIsInvalid() throws {
        let h = try SimulatorHarness()
        defer { h.shutdown() }
        // A valid token whose claims are swapped for another team's: the signature no longer covers them.
        let parts = try h.jwt().split(separator: ".").map(String.init)
        let claims = HandMadeJWT.base64url(Data(#"{"iss":"\#(TestKey.teamId)","iat":\#(Int(Date().timeIntervalSince1970) + 1)}"#.utf8))
        let outcome = try h.send(Push.request(1), authorization: parts[0] + "." + claims + "." + parts[2])
        #expect(outcome.status == 403 && outcome.reason == "InvalidProviderToken")
    }

    @Test func aWrongKidIsInvalid() throws {
        let h = try SimulatorHarness()
        defer { h.shutdown() }
        let outcome = try h.send(Push.request(1), authorization: try h.jwt(keyId: "OTHERKEY00"))
        #expect(outcome.status == 403 && outcome.reason == "InvalidProviderToken")
        #expect(h.sim.requestLog.entries().first?.jwtKid == "OTHERKEY00")
    }

    @Test func aWrongTeamIsInvalid() throws {
        let h = try SimulatorHarness()
        defer { h.shutdown() }
        let outcome = try h.send(Push.request(1), authorization: try h.jwt(teamId: "OTHERTEAM0"))
        #expect(outcome.status == 403 && outcome.reason == "InvalidProviderToken")
    }

    @Test func onlyES256WithRawSignaturesIsAccepted() throws {
        let h = try SimulatorHarness()
        defer { h.shutdown() }
        let key = try h.key.cryptoKey
        let now = Int(Date().timeIntervalSince1970)
        let claims = #"{"iss":"\#(TestKey.teamId)","iat":\#(now)}"#
        let hs256 = try HandMadeJWT.make(key: key, header: #"{"alg":"HS256","kid":"\#(TestKey.keyId)"}"#, claims: claims)
        let noIat = try HandMadeJWT.make(key: key, header: #"{"alg":"ES256","kid":"\#(TestKey.keyId)"}"#, claims: #"{"iss":"\#(TestKey.teamId)"}"#)
        let good = try HandMadeJWT.make(key: key, header: #"{"alg":"ES256","kid":"\#(TestKey.keyId)"}"#, claims: claims)
        // The same signature DER-encoded, as some libraries emit it: JWTs carry raw R‖S.
        let parts = good.split(separator: ".")
        let der = try key.signature(for: Data((parts[0] + "." + parts[1]).utf8)).derRepresentation
        let derToken = parts[0] + "." + parts[1] + "." + HandMadeJWT.base64url(der)
        for (name, jwt) in [("HS256", hs256), ("no iat", noIat), ("DER signature", String(derToken))] {
            let outcome = try h.send(Push.request(1), authorization: jwt)
            #expect(outcome.reason == "InvalidProviderToken", "\(name)")
        }
        #expect(try h.send(Push.request(1), authorization: good).status == 200, "the hand-made token itself is fine")
    }

    @Test func aTokenOlderThanAnHourIsExpired() throws {
        let h = try SimulatorHarness()
        defer { h.shutdown() }
        let old = try h.send(Push.request(1), authorization: try h.jwt(issuedAt: Date().addingTimeInterval(-3_700)))
        #expect(old.status == 403 && old.reason == "ExpiredProviderToken")
        #expect(APNsReason("ExpiredProviderToken").action == .refreshTokenAndRetry)
        let fresh = try h.send(Push.request(1), authorization: try h.jwt(issuedAt: Date().addingTimeInterval(-3_000)))
        #expect(fresh.status == 200)
    }

    @Test func jwtMaxAgeIsConfigurable() throws {
        let h = try SimulatorHarness { $0.jwtMaxAgeSeconds = 60 }
        defer { h.shutdown() }
        let outcome = try h.send(Push.request(1), authorization: try h.jwt(issuedAt: Date().addingTimeInterval(-600)))
        #expect(outcome.status == 403 && outcome.reason == "ExpiredProviderToken")
    }

    /// Apple: a new token more than once every 20 minutes on one connection is 429
    /// TooManyProviderTokenUpdates; the token in force stays usable, and another connection may
    /// use the new one.
    @Test func changingTheTokenTooSoonOnOneConnectionIs429() throws {
        let h = try SimulatorHarness()
        defer { h.shutdown() }
        let first = try h.jwt(issuedAt: Date().addingTimeInterval(-120))
        let second = try h.jwt(issuedAt: Date())
        let conn = try h.connection()
        #expect(try conn.send([Push.request(1)], authorization: first)[0].outcome.status == 200)
        let changed = try conn.send([Push.request(2)], authorization: second)[0].outcome
        #expect(changed.status == 429 && changed.reason == "TooManyProviderTokenUpdates")
        #expect(try conn.send([Push.request(3)], authorization: first)[0].outcome.status == 200, "the old token still works")
        #expect(try h.send(Push.request(4), authorization: second).status == 200, "a new connection may use the new token")
        #expect(Set(h.sim.requestLog.entries().prefix(3).map(\.connection)).count == 1, "the first three shared one connection")
    }

    @Test func theUpdateIntervalIsConfigurable() throws {
        let h = try SimulatorHarness { $0.tokenUpdateIntervalSeconds = 0 }
        defer { h.shutdown() }
        let conn = try h.connection()
        for i in 1...3 {
            let outcome = try conn.send([Push.request(i)], authorization: try h.jwt(issuedAt: Date().addingTimeInterval(Double(-i))))[0].outcome
            #expect(outcome.status == 200)
        }
    }

    @Test func theSignatureIsCheckedOncePerConnectionAndToken() throws {
        let connection = SimulatorConnection(id: 1)
        var calls = 0
        for _ in 0..<5 {
            _ = connection.providerTokenVerdict(for: "a.b.c") { _ in calls += 1; return .invalid(nil, why: "test") }
        }
        #expect(calls == 1)
        _ = connection.providerTokenVerdict(for: "d.e.f") { _ in calls += 1; return .invalid(nil, why: "test") }
        #expect(calls == 2)
    }
}
