import HeraldCore

/// A request's header fields packed the way `h2_submit` takes them (CHTTP2Client's
/// HTTP2Client.h: `[u16 length][name][u16 length][value]`…, `:path` first): the one place herald
/// builds an APNs request's fields, for device pushes and broadcasts. The fields every request
/// with the same `SharedKey` shares (authorization, topic, push type, priority, collapse id,
/// expiration) are packed once; per request only the path, the request's id and the length are,
/// the values unique to the request flagged so HPACK does not index them. A broadcast's path is
/// its app's (`/4/broadcasts/apps/<bundle id>`, from the request's topic), the same for every
/// request of that app: it is packed with the shared fields, so a request allocates no String.
struct FieldBlock {
    /// Everything in a request's fields but its path, id and length.
    struct SharedKey: Equatable {
        var generation: Int
        var topic: String
        var pushType: PushType
        var priority: Int
        var collapseId: String?
        var expiration: Int?
    }

    private(set) var bytes: [UInt8] = []
    /// The shared fields of the last few keys, most recent last: a pool sending for several apps
    /// of one team (docs/many-apps.md) alternates between their topics, and packing the shared
    /// fields again on every request would cost more than the request's own.
    private var recent: [Packed] = []
    /// A struct, not a tuple: an array of tuples is copied element by element through the
    /// runtime's generic tuple witnesses, on every request.
    private struct Packed { var key: SharedKey; var fields: [UInt8]; var path: [UInt8] }
    static let recentKeys = 8

    mutating func prepare(_ r: PushRequest, for destination: PushDestination, key: SharedKey, jwt: String?) {
        var found = recent.count - 1
        while found >= 0 && recent[found].key != key { found -= 1 }
        if found < 0 {
            if recent.count == Self.recentKeys { recent.removeFirst() }
            var shared: [UInt8] = []
            var path: [UInt8] = []
            switch destination {
            case .devices:
                // https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns
                Self.append(&shared, "apns-topic", r.topic.utf8)
                Self.append(&shared, "apns-push-type", r.pushType.rawValue.utf8)
                Self.append(&shared, "apns-priority", String(r.priority).utf8)
                if let c = r.collapseId { Self.append(&shared, "apns-collapse-id", c.utf8) }
                if let x = r.expiration { Self.append(&shared, "apns-expiration", String(x).utf8) }
            case .broadcasts:
                // https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns:
                // no apns-topic (the bundle id is in the path); the push type is always liveactivity;
                // priority and expiration are both required. 0 (attempt once, store nothing) is the
                // one expiration every channel takes, No Message Stored ones included.
                Self.append(&shared, "apns-push-type", PushType.liveactivity.rawValue.utf8)
                Self.append(&shared, "apns-priority", String(r.priority).utf8)
                Self.append(&shared, "apns-expiration", String(r.expiration ?? 0).utf8)
                Self.append(&path, ":path", Self.broadcastPath(Self.bundleId(topic: r.topic)).utf8)
            }
            if let jwt { Self.append(&shared, "authorization", "bearer \(jwt)".utf8) }
            recent.append(Packed(key: key, fields: shared, path: path))
            found = recent.count - 1
        }
        bytes.removeAll(keepingCapacity: true)
        switch destination {
        case .devices:
            let prefix = PushRequest.devicePathPrefix.utf8
            Self.appendName(&bytes, ":path", unique: true)
            Self.appendLength(&bytes, prefix.count + r.token.hex.utf8.count)
            bytes.append(contentsOf: prefix)
            bytes.append(contentsOf: r.token.hex.utf8)
            Self.append(&bytes, "apns-id", r.apnsId.utf8, unique: true)
        case .broadcasts:
            bytes.append(contentsOf: recent[found].path)
            Self.append(&bytes, "apns-channel-id", r.token.hex.utf8, unique: true)
            Self.append(&bytes, "apns-request-id", r.apnsId.utf8, unique: true)
        }
        Self.append(&bytes, "content-length", String(r.payload.count).utf8)
        bytes.append(contentsOf: recent[found].fields)
    }

    /// A broadcast's path: every channel of an app shares it.
    static func broadcastPath(_ bundleId: some StringProtocol) -> String { "/4/broadcasts/apps/" + bundleId }

    /// The bundle id a broadcast's path names: its Live Activity topic without the
    /// `.push-type.liveactivity` suffix (Apple's path takes "your app's bundle ID"; the simulator,
    /// like APNs, refuses a push-type suffix there with `TopicDisallowed`). A topic without the
    /// suffix is taken as the bundle id.
    static func bundleId(topic: String) -> Substring {
        let suffix = PushType.liveactivity.topicSuffix
        return topic.hasSuffix(suffix) ? topic.dropLast(suffix.count) : Substring(topic)
    }

    private static func append(_ out: inout [UInt8], _ name: StaticString, _ value: some Collection<UInt8>, unique: Bool = false) {
        appendName(&out, name, unique: unique)
        appendLength(&out, value.count)
        out.append(contentsOf: value)
    }

    /// `unique`: the value differs on every request, so HPACK should not index it (the name's
    /// length carries the flag in its top bit: HTTP2Client.h).
    private static func appendName(_ out: inout [UInt8], _ name: StaticString, unique: Bool = false) {
        appendLength(&out, name.utf8CodeUnitCount | (unique ? 0x8000 : 0))
        name.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    private static func appendLength(_ out: inout [UInt8], _ n: Int) {
        out.append(UInt8(truncatingIfNeeded: n >> 8))
        out.append(UInt8(truncatingIfNeeded: n))
    }
}
