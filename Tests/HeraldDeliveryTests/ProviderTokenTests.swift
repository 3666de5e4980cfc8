import Crypto
import Foundation
import HeraldCore
import HeraldDelivery
import HeraldTestSupport
import Testing

/// The JWT is signed with OpenSSL (herald) and verified here with swift-crypto: a second,
/// independent implementation, so a bug in the signing code cannot also hide in the check.
@Suite struct ProviderTokenTests {
    struct Decoded { var header: [String: Any]; var claims: [String: Any]; var signature: [UInt8]; var signingInput: String }

    func decode(_ jwt: String) throws -> Decoded {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        let header = try JSONSerialization.jsonObject(with: Data(try #require(Base64URL.decode(parts[0])))) as! [String: Any]
        let claims = try JSONSerialization.jsonObject(with: Data(try #require(Base64URL.decode(parts[1])))) as! [String: Any]
        return Decoded(header: header, claims: claims, signature: try #require(Base64URL.decode(parts[2])), signingInput: parts[0] + "." + parts[1])
    }

    @Test func signatureVerifiesWithAnIndependentImplementation() throws {
        let key = TestKey()
        let token = try ProviderToken(privateKeyPEM: key.privateKeyPEM, source: "test", teamId: TestKey.teamId, keyId: TestKey.keyId)
        let jwt = try token.current()
        let d = try decode(jwt)
        #expect(d.header["alg"] as? String == "ES256")
        #expect(d.header["kid"] as? String == TestKey.keyId)
        #expect(d.claims["iss"] as? String == TestKey.teamId)
        let iat = try #require(d.claims["iat"] as? Int)
        #expect(abs(iat - Int(Date().timeIntervalSince1970)) < 5)
        #expect(d.signature.count == 64, "JOSE R‖S, not DER")
        let publicKey = try P256.Signing.PublicKey(pemRepresentation: key.publicKeyPEM)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: d.signature)
        #expect(publicKey.isValidSignature(signature, for: Data(d.signingInput.utf8)))
        // A different key's signature does not verify: the check above can fail.
        let other = try P256.Signing.PublicKey(pemRepresentation: TestKey().publicKeyPEM)
        #expect(!other.isValidSignature(signature, for: Data(d.signingInput.utf8)))
    }

    @Test func oneTokenIsReusedUntilItIsFiftyMinutesOld() throws {
        final class Clock: @unchecked Sendable { var now = Date(timeIntervalSince1970: 1_800_000_000) }
        let clock = Clock()
        let token = try ProviderToken(privateKeyPEM: TestKey().privateKeyPEM, source: "test", teamId: TestKey.teamId,
                                      keyId: TestKey.keyId, clock: { clock.now })
        let first = try token.current()
        clock.now += 49 * 60
        #expect(try token.current() == first)
        #expect(token.signedCount == 1)
        clock.now += 60
        let second = try token.current()
        #expect(second != first)
        #expect(token.signedCount == 2)
        #expect(try decode(second).claims["iat"] as? Int == 1_800_000_000 + 50 * 60)
        token.invalidate()
        _ = try token.current()
        #expect(token.signedCount == 3)
    }

    @Test func connectionsAskingAtOnceShareOneSignature() throws {
        // Connection A reads the time, then connection B reads a later one and signs first. A must
        // take B's token, not see it as issued in its future and sign another. The clock holds A's
        // first reading until B is done, or half a second if B cannot start before A is done.
        final class Clock: @unchecked Sendable {
            let lock = NSLock(); var now = Date(timeIntervalSince1970: 1_800_000_000); var calls = 0
            let bDone = DispatchSemaphore(value: 0), aReading = DispatchSemaphore(value: 0)
        }
        let clock = Clock()
        let token = try ProviderToken(privateKeyPEM: TestKey().privateKeyPEM, source: "test", teamId: TestKey.teamId,
                                      keyId: TestKey.keyId, clock: {
            clock.lock.lock()
            clock.calls += 1; let call = clock.calls
            clock.now += 0.001; let reading = clock.now
            clock.lock.unlock()
            if call == 1 { clock.aReading.signal(); _ = clock.bDone.wait(timeout: .now() + 0.5) }
            return reading
        })
        // Threads of their own: a thread pool as wide as the cores may not start B while A waits.
        let finished = DispatchSemaphore(value: 0)
        Thread { _ = try? token.current(); finished.signal() }.start()
        clock.aReading.wait()
        Thread { _ = try? token.current(); clock.bDone.signal(); finished.signal() }.start()
        finished.wait(); finished.wait()
        #expect(token.signedCount == 1)
    }

    @Test func unusableKeysAreRejectedWithoutEchoingThem() throws {
        let secret = "-----BEGIN PRIVATE KEY-----\nTUlJQ2VnSUJBREFOQmdrcWhraUc5dzBCQVFFRkFBU0NB\n-----END PRIVATE KEY-----\n"
        let error = try #require(throws: DeliveryError.self) {
            try ProviderToken(privateKeyPEM: secret, source: "AuthKey_X.p8", teamId: "T", keyId: "K")
        }
        #expect(error.description.contains("AuthKey_X.p8"))
        #expect(!error.description.contains("TUlJQ2Vn"))
        let missing = try #require(throws: DeliveryError.self) {
            try ProviderToken(auth: TokenAuthSpec(teamId: "T", keyId: "K", key: .environment("HERALD_TEST_NO_SUCH_VAR")), environment: [:])
        }
        #expect(missing == .keyEnvironmentMissing(variable: "HERALD_TEST_NO_SUCH_VAR"))
    }
}
