import Foundation
import HeraldCore

/// Apple's request rules, checked in a fixed order; the first failing check decides and every
/// status comes from `APNsReasonTable`. Sources:
/// https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns
/// and, for provider tokens,
/// https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns.
///
/// Apple documents no order. Ours, from the outside of the request in:
///  1. `:path` is `/3/device/<token>`: else 404 `BadPath`; an empty token 400 `MissingDeviceToken`.
///  2. `:method` is POST: else 405 `MethodNotAllowed`.
///  3. No repeated `authorization` or `apns-*` header: else 400 `DuplicateHeaders`.
///  4. Provider token (token authentication only; on a connection with a client certificate Apple
///     ignores `authorization`): absent or empty 403 `MissingProviderToken`; not `bearer <ES256
///     JWT>` whose kid names a configured key, with that key's team as iss and a valid signature
///     403 `InvalidProviderToken`; `iat` older than the maximum age 403 `ExpiredProviderToken`;
///     another team's token on a connection bound to a team 403 `UnrelatedKeyIdInToken`; a new
///     token on a connection that adopted another less than the update interval ago 429
///     `TooManyProviderTokenUpdates`.
///  5. Device token: hex, an even number of digits, 8 to 256 bytes (Apple: "Don't make
///     assumptions about device token size"): else 400 `BadDeviceToken`.
///  6. `apns-topic`: absent or empty 400 `MissingTopic` (a certificate connection defaults it to
///     the bundle id); with a bundle id configured, another app's topic 400 `TopicDisallowed`
///     and this app's topic with another push type's suffix 400 `BadTopic`; then the same two
///     checks against the apps of the credential the request came with (its key's bundle ids,
///     or the client CA's), when it names any.
///  7. `apns-push-type`: unknown 400 `InvalidPushType` (absent means alert).
///  8. `apns-priority`: not 10, 5 or 1, background not 5, or a Live Activity at 1: 400 `BadPriority`.
///  9. `apns-id`: not a lowercase canonical UUID 400 `BadMessageId`.
/// 10. `apns-expiration`: not a non-negative whole number 400 `BadExpirationDate`.
/// 11. `apns-collapse-id`: over 64 bytes 400 `BadCollapseId`.
/// 12. Body: empty 400 `PayloadEmpty`; over 4096 bytes (5120 for VoIP) 413 `PayloadTooLarge`;
///     not a JSON object with an `aps` dictionary 400 `BadPayload` (herald's reason: Apple
///     documents none for this).
public struct RequestValidator: Sendable {
    /// Nil when no provider-token key is configured (certificate authentication only).
    public let verifier: ProviderTokenVerifier?
    public let bundleId: String?
    /// The apps each key's tokens may send to, by key ID (keys limited to some apps only).
    let tokenApps: [String: [String]]
    /// The apps client certificates may send to; empty: any.
    let certificateApps: [String]
    public let jwtMaxAgeSeconds: Int
    public let tokenUpdateIntervalSeconds: Int

    /// See `APNsReasonTable`: herald's own reason for a body that is not a JSON object with an
    /// `aps` dictionary, so a malformed payload shows up in rehearsals instead of passing.
    public static let badPayload: APNsReason = "BadPayload"
    /// Apple: "apns-collapse-id … must not exceed 64 bytes."
    public static let maximumCollapseIdBytes = 64

    /// The headers that must not repeat (400 `DuplicateHeaders`).
    static let singleValued = ["authorization", "apns-id", "apns-topic", "apns-push-type", "apns-priority",
                               "apns-expiration", "apns-collapse-id"]

    public init(configuration: SimulatorConfiguration) throws(SimulatorError) {
        let keys = configuration.authentication.tokenKeys
        self.verifier = keys.isEmpty ? nil : try ProviderTokenVerifier(keys: keys)
        var tokenApps: [String: [String]] = [:]
        for key in keys where !key.bundleIds.isEmpty { tokenApps[key.keyId] = key.bundleIds }
        self.tokenApps = tokenApps
        self.certificateApps = configuration.authentication.clientCertificates?.bundleIds ?? []
        self.bundleId = configuration.bundleId
        self.jwtMaxAgeSeconds = configuration.jwtMaxAgeSeconds
        self.tokenUpdateIntervalSeconds = configuration.tokenUpdateIntervalSeconds
    }

    /// Checks `request` in the order above. `connection` caches token verdicts and remembers
    /// the token in force (a fresh `SimulatorConnection` in pure tests).
    public func validate(_ request: SimulatorRequest, on connection: SimulatorConnection, now: Date) -> SimulatorVerdict {
        // 1. :path
        guard let token = request.pathToken else { return .rejected("BadPath", token: nil, providerToken: nil) }
        if token.isEmpty { return .rejected("MissingDeviceToken", token: nil, providerToken: nil) }
        if token.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            return .rejected("BadPath", token: nil, providerToken: nil)
        }
        var claims: ProviderTokenClaims?
        var authenticated = isCertificateConnection(connection)
        var topic: String?
        func reject(_ reason: APNsReason) -> SimulatorVerdict {
            var verdict = SimulatorVerdict.rejected(reason, token: token, providerToken: claims, authenticated: authenticated)
            verdict.topic = topic
            return verdict
        }

        // 2. :method
        guard request.method == "POST" else { return reject("MethodNotAllowed") }

        // 3. repeated headers
        if request.headers.count > 1, Self.singleValued.contains(where: { request.count(of: $0) > 1 }) {
            return reject("DuplicateHeaders")
        }

        // 4. provider token
        let auth = authenticate(request, on: connection, now: now)
        claims = auth.claims
        authenticated = auth.authenticated
        if let problem = auth.problem { return reject(problem) }

        // 5. device token
        guard Self.isPlausibleToken(token) else { return reject("BadDeviceToken") }

        // 6. apns-topic, against the push type's suffix when the push type is known
        // Nil for an unknown push type; an absent header means alert.
        let pushType: PushType? = request.header("apns-push-type").map { PushType(rawValue: $0) } ?? .alert
        var sentTopic = request.header("apns-topic") ?? ""
        if sentTopic.isEmpty, auth.certificate, let app = bundleId ?? (certificateApps.count == 1 ? certificateApps[0] : nil) {
            sentTopic = app
        }
        if sentTopic.isEmpty { return reject("MissingTopic") }
        topic = sentTopic
        if let bundleId, let problem = Self.topicProblem(sentTopic, apps: [bundleId], pushType: pushType) { return reject(problem) }
        if !auth.apps.isEmpty, let problem = Self.topicProblem(sentTopic, apps: auth.apps, pushType: pushType) { return reject(problem) }

        // 7. apns-push-type
        guard let pushType else { return reject("InvalidPushType") }

        // 8. apns-priority: 10 when absent. Background must be 5 ("10 is an error"); Live Activities 5 or 10.
        var priority = 10
        if let raw = request.header("apns-priority") {
            guard let parsed = Int(raw), [1, 5, 10].contains(parsed) else { return reject("BadPriority") }
            priority = parsed
        }
        if pushType == .background && priority != 5 { return reject("BadPriority") }
        if pushType == .liveactivity && priority == 1 { return reject("BadPriority") }

        // 9–11. apns-id, apns-expiration, apns-collapse-id
        if let id = request.header("apns-id"), !Self.isCanonicalUUID(id) { return reject("BadMessageId") }
        if let raw = request.header("apns-expiration") {
            guard let seconds = Int(raw), seconds >= 0 else { return reject("BadExpirationDate") }
        }
        if let collapse = request.header("apns-collapse-id"), collapse.utf8.count > Self.maximumCollapseIdBytes {
            return reject("BadCollapseId")
        }

        // 12. body
        if request.bodyLength == 0 { return reject("PayloadEmpty") }
        if request.bodyLength > pushType.payloadLimit { return reject("PayloadTooLarge") }
        if !JSONShape.isObjectWithApsDictionary(request.body) { return reject(Self.badPayload) }

        var accepted = SimulatorVerdict.accepted(token: token, providerToken: claims, authenticated: authenticated)
        accepted.topic = topic
        return accepted
    }

    /// Hex digits (either case), an even count, `DeviceToken`'s plausible byte range.
    static func isPlausibleToken(_ token: String) -> Bool {
        let n = token.utf8.count
        guard n % 2 == 0, (DeviceToken.minimumBytes * 2...DeviceToken.maximumBytes * 2).contains(n) else { return false }
        return token.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46) }
    }

    /// Why `topic` is not for one of `apps`: 400 `TopicDisallowed` when it is no app's (with any
    /// push-type suffix), 400 `BadTopic` when it is an app's with another push type's suffix.
    static func topicProblem(_ topic: String, apps: [String], pushType: PushType?) -> APNsReason? {
        var matched = false
        for app in apps {
            guard let suffix = suffix(of: topic, bundleId: app) else { continue }
            guard let pushType else { return nil }
            if suffix == pushType.topicSuffix { return nil }
            matched = true
        }
        return matched ? "BadTopic" : "TopicDisallowed"
    }

    /// The part of `topic` after `bundleId` when it is the bundle id or the bundle id plus one of
    /// Apple's push-type suffixes; nil for any other topic (another app's).
    static func suffix(of topic: String, bundleId: String) -> String? {
        guard topic.hasPrefix(bundleId) else { return nil }
        let rest = String(topic.dropFirst(bundleId.count))
        return knownSuffixes.contains(rest) ? rest : nil
    }

    static let knownSuffixes = Set(PushType.allCases.map(\.topicSuffix))

    /// Apple: apns-id is "a canonical UUID … lowercase, 8-4-4-4-12" (32 hex digits with four hyphens).
    public static func isCanonicalUUID(_ text: String) -> Bool {
        var count = 0
        for (i, b) in text.utf8.enumerated() {
            count += 1
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if b != UInt8(ascii: "-") { return false }
            } else if !((b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "f"))) {
                return false
            }
        }
        return count == 36
    }
}
