import Foundation
import HeraldCore
import Synchronization

/// The APNs provider token (JWT, ES256), shared by every connection of a campaign.
///
/// Apple (https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns): refresh "no more than once every 20 minutes and no less than once every 60 minutes";
/// a token older than an hour gets 403 ExpiredProviderToken, and re-signing more often than every
/// 20 minutes gets 429 TooManyProviderTokenUpdates. So one token is reused and re-signed when it
/// reaches `refreshAge` (50 minutes, as pushy, apns2 and APNSwift do).
public final class ProviderToken: Sendable {
    public static let refreshAge: TimeInterval = 50 * 60

    private let key: ES256Key
    private let teamId: String
    private let keyId: String
    private let clock: @Sendable () -> Date
    private let cached = Locked<(jwt: String, issuedAt: Date)?>(nil)
    private let signCount = Atomic<Int>(0)

    /// Loads the key from where the job says. The key text is never kept beyond OpenSSL's handle.
    public convenience init(auth: TokenAuthSpec, environment: [String: String] = ProcessInfo.processInfo.environment) throws(DeliveryError) {
        let (pem, source) = try AuthKeySource.read(auth.key, environment: environment)
        try self.init(privateKeyPEM: pem, source: source, teamId: auth.teamId, keyId: auth.keyId)
    }

    public init(privateKeyPEM: String, source: String, teamId: String, keyId: String,
                clock: @escaping @Sendable () -> Date = { Date() }) throws(DeliveryError) {
        self.key = try ES256Key(pem: privateKeyPEM, source: source)
        self.teamId = teamId
        self.keyId = keyId
        self.clock = clock
    }

    /// How many JWTs were signed so far (a summary figure; a test asserts reuse).
    public var signedCount: Int { signCount.load(ordering: .relaxed) }

    /// The current JWT, re-signed only once it is `refreshAge` old. Signing happens under the lock,
    /// so connections asking at the same moment share one new token instead of each signing one.
    /// The clock is read under the lock too: a time read before another connection signed would
    /// look older than that token's `iat` and, by the clock-went-back rule, sign a second one.
    public func current() throws(DeliveryError) -> String {
        let result: Result<String, DeliveryError> = cached.withLock { c in
            let now = clock()
            if let c, now.timeIntervalSince(c.issuedAt) < Self.refreshAge, now >= c.issuedAt { return .success(c.jwt) }
            do throws(DeliveryError) {
                let jwt = try sign(issuedAt: now)
                c = (jwt, now)
                return .success(jwt)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Drops the cached token (after ExpiredProviderToken) so the next call signs a new one.
    public func invalidate() { cached.withLock { $0 = nil } }

    /// Drops the cached token only if it is still `jwt`, the one APNs rejected as expired: the
    /// many streams answered ExpiredProviderToken for one token cause one new signature, not many.
    public func invalidate(rejected jwt: String) {
        cached.withLock { if $0?.jwt == jwt { $0 = nil } }
    }

    /// Apple: "APNs report an error if you use a new token more than once every 20 minutes on the
    /// same connection". A connection that would switch sooner is replaced by a fresh one.
    public static let minimumReuse: TimeInterval = 20 * 60

    func sign(issuedAt: Date) throws(DeliveryError) -> String {
        let header = #"{"alg":"ES256","kid":"\#(keyId)"}"#
        let claims = #"{"iss":"\#(teamId)","iat":\#(Int(issuedAt.timeIntervalSince1970))}"#
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try key.sign(Array(signingInput.utf8))
        signCount.add(1, ordering: .relaxed)
        return signingInput + "." + Base64URL.encode(signature)
    }
}

/// Reads the .p8 key text from where the job says: the one place a key file or variable is opened.
public enum AuthKeySource {
    /// The PEM text and a label for messages (the path, or "from $NAME"); never the key itself.
    public static func read(_ source: KeySource,
                            environment: [String: String] = ProcessInfo.processInfo.environment) throws(DeliveryError) -> (pem: String, label: String) {
        switch source {
        case .file(let path):
            do { return (try String(contentsOfFile: path, encoding: .utf8), path) } catch {
                throw .keyUnreadable(path: path, why: (error as NSError).localizedFailureReason ?? "read failed")
            }
        case .environment(let name):
            guard let v = environment[name], !v.isEmpty else { throw .keyEnvironmentMissing(variable: name) }
            return (v, "from $\(name)")
        }
    }
}

/// base64url without padding (RFC 7515 §2).
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        var s = Data(bytes).base64EncodedString()
        s = s.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while s.hasSuffix("=") { s.removeLast() }
        return s
    }

    public static func decode(_ text: String) -> [UInt8]? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map { Array($0) }
    }
}
