import HeraldCore

/// The APNs request headers for one recipient (https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns), everything but
/// `authorization` and `:path`. `apns-expiration` stays symbolic until the moment of sending,
/// because "seconds from send" must count from the send, not from when the audience was read.
public struct RenderedHeaders: Sendable, Equatable {
    /// UUIDv5 of campaign and token: the same on every attempt and every rerun.
    public var apnsId: String
    public var pushType: PushType
    /// The bundle id plus the push type's suffix.
    public var topic: String
    public var priority: Int
    public var expiration: ExpirationSpec
    /// Nil: no `apns-collapse-id` header.
    public var collapseId: String?

    public init(apnsId: String, pushType: PushType, topic: String, priority: Int, expiration: ExpirationSpec, collapseId: String?) {
        self.apnsId = apnsId; self.pushType = pushType; self.topic = topic; self.priority = priority
        self.expiration = expiration; self.collapseId = collapseId
    }

    /// The `apns-expiration` value for a push sent at `now` (UNIX seconds), nil to leave it out.
    public func expirationValue(sentAt now: Int) -> Int? { expiration.headerValue(sentAt: now) }

    /// Header names and values in the order herald sends them.
    public func fields(sentAt now: Int) -> [(name: String, value: String)] {
        var out: [(name: String, value: String)] = [
            ("apns-id", apnsId), ("apns-push-type", pushType.rawValue), ("apns-topic", topic), ("apns-priority", String(priority)),
        ]
        if let collapseId { out.append(("apns-collapse-id", collapseId)) }
        if let value = expirationValue(sentAt: now) { out.append(("apns-expiration", String(value))) }
        return out
    }
}

/// What rendering one recipient's headers produced; problems are row errors like payload ones.
public enum HeaderOutcome: Sendable, Equatable {
    case headers(RenderedHeaders)
    /// A placeholder's field is missing and `missing_field: skip_recipient` is set.
    case skip(field: String)
    /// `.missingField` or `.badFieldValue` (a collapse id over 64 bytes, a priority that is
    /// not 1, 5 or 10, an expiration that is not a time).
    case failure(reason: InvalidRowReason, field: String, detail: String)
}
