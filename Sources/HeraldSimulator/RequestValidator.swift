import Foundation
import HeraldCore

/// The validating behaviour: answers each request the way APNs would for a healthy service,
/// following ../shared/APNS.md §4.2–4.7. The first failing check decides; every status comes
/// from `APNsReasonTable`.
///
/// Order: path, method, provider token, device token, duplicate headers, topic, push type,
/// priority, apns-id, expiration, collapse id, payload, then the configured token prefixes.
public struct RequestValidator: SimulatorBehavior {
    public let verifier: ProviderTokenVerifier
    public let bundleId: String?
    public let unregisteredPrefixes: [String]
    public let badTokenPrefixes: [String]

    /// Not an Apple reason: APNs documents no reason for a body that is not a JSON object with
    /// an `aps` dictionary. The simulator answers 400 with this so a malformed payload shows up in
    /// tests instead of passing silently; herald treats it like any unknown reason (permanent).
    public static let badPayload: APNsReason = "BadPayload"
    /// Apple: "apns-collapse-id … must not exceed 64 bytes."
    public static let maximumCollapseIdBytes = 64

    /// The apns-* headers that must not repeat (400 `DuplicateHeaders`).
    static let singleValued = ["authorization", "apns-id", "apns-topic", "apns-push-type", "apns-priority",
                               "apns-expiration", "apns-collapse-id"]

    public init(configuration: SimulatorConfiguration) throws(SimulatorError) {
        self.verifier = try ProviderTokenVerifier(keyId: configuration.keyId, teamId: configuration.teamId,
                                                  publicKeyPEM: configuration.publicKeyPEM)
        self.bundleId = configuration.bundleId
        self.unregisteredPrefixes = configuration.unregisteredPrefixes.map { $0.lowercased() }
        self.badTokenPrefixes = configuration.badTokenPrefixes.map { $0.lowercased() }
    }

    public func respond(to request: SimulatorRequest, on connection: SimulatorConnection, now: Date) -> SimulatorVerdict {
        validate(request, now: now) { connection.providerTokenVerdict(for: $0, verify: verifier.verify) }
    }

    /// Pure validation. `providerToken` maps a JWT string to its verdict (a per-connection
    /// cache in the server; `verifier.verify` directly in tests).
    public func validate(_ request: SimulatorRequest, now: Date,
                         providerToken: ((String) -> ProviderTokenVerdict)? = nil) -> SimulatorVerdict {
        // :path — "/3/device/<token>".
        let prefix = "/3/device/"
        guard request.path.hasPrefix(prefix) else { return .rejected("BadPath", token: nil, providerToken: nil) }
        let token = String(request.path.dropFirst(prefix.count))
        if token.isEmpty { return .rejected("MissingDeviceToken", token: nil, providerToken: nil) }
        if token.contains("/") { return .rejected("BadPath", token: nil, providerToken: nil) }

        func reject(_ reason: APNsReason, _ claims: ProviderTokenClaims? = nil, timestamp: Int? = nil) -> SimulatorVerdict {
            .rejected(reason, timestamp: timestamp, token: token, providerToken: claims)
        }

        guard request.method == "POST" else { return reject("MethodNotAllowed") }

        // authorization — "bearer <JWT>", verified once per connection and string, aged per request.
        guard let authorization = request.header("authorization"), !authorization.isEmpty else {
            return reject("MissingProviderToken")
        }
        guard authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            return reject("InvalidProviderToken")
        }
        let jwt = String(authorization.dropFirst(7))
        let verdict = providerToken?(jwt) ?? verifier.verify(jwt)
        guard case .valid(let claims) = verdict, let iat = claims.iat else { return reject("InvalidProviderToken", verdict.claims) }
        if Int(now.timeIntervalSince1970) - iat > ProviderTokenVerifier.maximumAge { return reject("ExpiredProviderToken", claims) }

        // Device token: hex of plausible length, exactly as canonical (lowercase, no spaces).
        guard case .success(let canonical) = DeviceToken.normalize(token), canonical.hex == token else {
            return reject("BadDeviceToken", claims)
        }

        if Self.singleValued.contains(where: { request.count(of: $0) > 1 }) { return reject("DuplicateHeaders", claims) }

        // apns-topic and apns-push-type (absent push type: alert, Apple's default for most apps).
        guard let topic = request.header("apns-topic"), !topic.isEmpty else { return reject("MissingTopic", claims) }
        var pushType = PushType.alert
        if let raw = request.header("apns-push-type") {
            guard let parsed = PushType(rawValue: raw) else { return reject("InvalidPushType", claims) }
            pushType = parsed
        }
        if let bundleId, topic != bundleId + pushType.topicSuffix { return reject("BadTopic", claims) }

        // apns-priority: 10 when absent. Background must be 5 ("10 is an error"); Live Activities 5 or 10.
        var priority = 10
        if let raw = request.header("apns-priority") {
            guard let parsed = Int(raw), [1, 5, 10].contains(parsed) else { return reject("BadPriority", claims) }
            priority = parsed
        }
        if pushType == .background && priority != 5 { return reject("BadPriority", claims) }
        if pushType == .liveactivity && priority == 1 { return reject("BadPriority", claims) }

        if let id = request.header("apns-id"), !Self.isCanonicalUUID(id) { return reject("BadMessageId", claims) }
        if let raw = request.header("apns-expiration") {
            guard let seconds = Int(raw), seconds >= 0 else { return reject("BadExpirationDate", claims) }
        }
        if let collapse = request.header("apns-collapse-id"), collapse.utf8.count > Self.maximumCollapseIdBytes {
            return reject("BadCollapseId", claims)
        }

        // Payload: non-empty, within the push type's limit, a JSON object with an `aps` dictionary.
        if request.bodyLength == 0 { return reject("PayloadEmpty", claims) }
        if request.bodyLength > pushType.payloadLimit { return reject("PayloadTooLarge", claims) }
        if !Self.hasApsDictionary(request.body) { return reject(Self.badPayload, claims) }

        if unregisteredPrefixes.contains(where: { token.hasPrefix($0) }) {
            return reject("Unregistered", claims, timestamp: Int(now.timeIntervalSince1970 * 1000))
        }
        if badTokenPrefixes.contains(where: { token.hasPrefix($0) }) { return reject("BadDeviceToken", claims) }
        return .accepted(token: token, providerToken: claims)
    }

    /// Apple: apns-id is "a canonical UUID … lowercase, 8-4-4-4-12" (32 hex digits with four hyphens).
    public static func isCanonicalUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (i, b) in bytes.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if b != UInt8(ascii: "-") { return false }
            } else if !((b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "f"))) {
                return false
            }
        }
        return true
    }

    /// True if `body` parses as a JSON object whose `aps` member is an object.
    static func hasApsDictionary(_ body: [UInt8]) -> Bool {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return false }
        return object["aps"] is [String: Any]
    }
}
