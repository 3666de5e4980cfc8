/// What herald does with an APNs answer. One table, read by the sender, the simulator and the reports.
public enum ReasonAction: String, Sendable, CaseIterable {
    /// Retry the same request later (backoff); the token is fine.
    case retryAfterDelay = "retry_after_delay"
    /// Retry on a fresh connection (the server is going away or unhealthy).
    case retryOnNewConnection = "retry_on_new_connection"
    /// Sign a new provider token, open a new connection, retry.
    case refreshTokenAndRetry = "refresh_token_and_retry"
    /// Final for this recipient: record and never resend.
    case permanent = "permanent"
    /// Our configuration is wrong (key, topic, certificate): stop the whole campaign.
    case abortCampaign = "abort_campaign"
}

/// An APNs `reason` string. A struct over known values (not a closed enum) so that a reason
/// Apple adds tomorrow is carried verbatim instead of breaking decoding.
public struct APNsReason: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    /// The table entry, or nil for a reason Apple has not documented.
    public var entry: APNsReasonTable.Entry? { APNsReasonTable.entry(for: self) }
    /// Unknown reasons are "recorded verbatim, not retried".
    public var action: ReasonAction { entry?.action ?? .permanent }
    public var isKnown: Bool { entry != nil }
}

/// Apple's reason table, from "Handling notification responses from APNs" (https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns).
/// Where Apple states no action for a reason (IdleTimeout, the 5xx and key-ID reasons) the action
/// is herald's own (docs/delivery.md); Apple's own rule: "Don't retry notification responses
/// with the error code BadDeviceToken, DeviceTokenNotForTopic, Forbidden, ExpiredToken, Unregistered,
/// or PayloadTooLarge. You can retry with a delay, if you get the error code TooManyRequests."
public enum APNsReasonTable {
    public struct Entry: Sendable, Hashable {
        public let reason: APNsReason
        public let status: Int
        public let action: ReasonAction
        public let meaning: String
    }

    public static let entries: [Entry] = [
        Entry(reason: "BadCollapseId", status: 400, action: .permanent, meaning: "collapse identifier exceeds 64 bytes"),
        Entry(reason: "BadDeviceToken", status: 400, action: .permanent, meaning: "device token invalid, or for the other environment (sandbox/production)"),
        Entry(reason: "BadExpirationDate", status: 400, action: .permanent, meaning: "apns-expiration value is bad"),
        Entry(reason: "BadMessageId", status: 400, action: .permanent, meaning: "apns-id value is bad"),
        Entry(reason: "BadPriority", status: 400, action: .permanent, meaning: "apns-priority value is bad"),
        Entry(reason: "BadTopic", status: 400, action: .abortCampaign, meaning: "apns-topic is invalid"),
        Entry(reason: "DeviceTokenNotForTopic", status: 400, action: .permanent, meaning: "device token does not match the topic"),
        Entry(reason: "DuplicateHeaders", status: 400, action: .permanent, meaning: "one or more headers are repeated"),
        Entry(reason: "IdleTimeout", status: 400, action: .retryOnNewConnection, meaning: "idle timeout"),
        Entry(reason: "InvalidPushType", status: 400, action: .permanent, meaning: "apns-push-type value is invalid"),
        Entry(reason: "MissingDeviceToken", status: 400, action: .permanent, meaning: "device token not specified in the request path"),
        Entry(reason: "MissingTopic", status: 400, action: .abortCampaign, meaning: "apns-topic header is required and missing"),
        Entry(reason: "PayloadEmpty", status: 400, action: .permanent, meaning: "message payload is empty"),
        Entry(reason: "TopicDisallowed", status: 400, action: .abortCampaign, meaning: "pushing to this topic is not allowed"),
        // Not Apple's: herald's simulator answers this for a body that is not a JSON object with
        // an `aps` dictionary, for which Apple documents no reason. Listed so reports can say what it means.
        Entry(reason: "BadPayload", status: 400, action: .permanent, meaning: "payload is not a JSON object with an aps dictionary (herald simulator)"),
        // Broadcast and channel-management reasons (https://developer.apple.com/documentation/usernotifications/handling-error-responses-from-apns).
        // A channel's own problem ends that channel's send; the app's configuration stops the campaign.
        Entry(reason: "FeatureNotEnabled", status: 400, action: .abortCampaign, meaning: "broadcast capability is not enabled for this app (Certificates, IDs & Profiles)"),
        Entry(reason: "MissingChannelId", status: 400, action: .permanent, meaning: "apns-channel-id header is missing"),
        Entry(reason: "BadChannelId", status: 400, action: .permanent, meaning: "apns-channel-id is not base64, or too long"),
        Entry(reason: "ChannelNotRegistered", status: 400, action: .permanent, meaning: "the channel does not exist (deleted, or of the other environment)"),
        Entry(reason: "BadRequestParams", status: 400, action: .permanent, meaning: "the JSON request has an attribute APNs does not recognize"),
        Entry(reason: "BadRequestPayload", status: 400, action: .permanent, meaning: "the JSON request cannot be parsed"),
        Entry(reason: "MissingPushType", status: 400, action: .permanent, meaning: "apns-push-type header is missing"),
        Entry(reason: "CannotCreateChannelConfig", status: 400, action: .permanent, meaning: "the app has reached its channel limit (10,000 per environment): delete unused channels"),
        Entry(reason: "TopicMismatch", status: 403, action: .abortCampaign, meaning: "the key's or certificate's bundle ids do not include the bundle id in the path"),
        Entry(reason: "BadCertificate", status: 403, action: .abortCampaign, meaning: "certificate is invalid"),
        Entry(reason: "BadCertificateEnvironment", status: 403, action: .abortCampaign, meaning: "certificate is for the wrong environment"),
        Entry(reason: "ExpiredProviderToken", status: 403, action: .refreshTokenAndRetry, meaning: "provider token is stale; sign a new one"),
        Entry(reason: "Forbidden", status: 403, action: .permanent, meaning: "the specified action is not allowed"),
        Entry(reason: "InvalidProviderToken", status: 403, action: .abortCampaign, meaning: "provider token is not valid or its signature could not be verified"),
        Entry(reason: "MissingProviderToken", status: 403, action: .abortCampaign, meaning: "no provider certificate and no provider token"),
        Entry(reason: "UnrelatedKeyIdInToken", status: 403, action: .retryOnNewConnection, meaning: "key ID is unrelated to the key of this connection's first push"),
        Entry(reason: "BadEnvironmentKeyIdInToken", status: 403, action: .abortCampaign, meaning: "key ID does not match the environment"),
        Entry(reason: "BadEnvironmentKeyInToken", status: 403, action: .abortCampaign, meaning: "key does not match the environment (undocumented variant)"),
        Entry(reason: "BadPath", status: 404, action: .permanent, meaning: "request :path is invalid"),
        Entry(reason: "MethodNotAllowed", status: 405, action: .permanent, meaning: "request method is not POST"),
        Entry(reason: "ExpiredToken", status: 410, action: .permanent, meaning: "device token has expired"),
        Entry(reason: "Unregistered", status: 410, action: .permanent, meaning: "device token is no longer active for the topic"),
        Entry(reason: "PayloadTooLarge", status: 413, action: .permanent, meaning: "payload exceeds the size limit"),
        Entry(reason: "TooManyProviderTokenUpdates", status: 429, action: .retryAfterDelay, meaning: "provider token updated too often"),
        Entry(reason: "TooManyRequests", status: 429, action: .retryAfterDelay, meaning: "too many requests to the same device token"),
        Entry(reason: "InternalServerError", status: 500, action: .retryAfterDelay, meaning: "internal server error"),
        Entry(reason: "ServiceUnavailable", status: 503, action: .retryOnNewConnection, meaning: "service unavailable"),
        // Apple's broadcast table spells the 503 reason with a space.
        Entry(reason: "Service Unavailable", status: 503, action: .retryOnNewConnection, meaning: "service unavailable (broadcast spelling)"),
        Entry(reason: "Shutdown", status: 503, action: .retryOnNewConnection, meaning: "server is shutting down"),
    ]

    private static let byReason: [APNsReason: Entry] = Dictionary(uniqueKeysWithValues: entries.map { ($0.reason, $0) })

    public static func entry(for reason: APNsReason) -> Entry? { byReason[reason] }

    /// What to do with an answer, including bodies without a reason and statuses Apple
    /// answers without one (a 5xx from a proxy, say).
    public static func action(status: Int, reason: APNsReason?) -> ReasonAction {
        if status == 200 { return .permanent }
        if let reason, let entry = entry(for: reason) { return entry.action }
        switch status {
        case 429, 500: return .retryAfterDelay
        case 502, 503, 504: return .retryOnNewConnection
        default: return .permanent
        }
    }
}
