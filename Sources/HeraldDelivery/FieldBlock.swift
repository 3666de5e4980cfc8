import HeraldCore

/// A request's header fields packed the way `h2_submit` takes them (CHTTP2Client's
/// HTTP2Client.h: `[u16 length][name][u16 length][value]`…, `:path` first). The fields every
/// request with the same `HeaderKey` shares (authorization, topic, push type, priority, collapse
/// id, expiration) are packed once; per request only the path, apns-id and length are, the path
/// and apns-id flagged as unique to the request so HPACK does not index them.
struct FieldBlock {
    private(set) var bytes: [UInt8] = []
    private var shared: [UInt8] = []
    private var sharedKey: StreamSlot.HeaderKey?

    mutating func prepare(_ r: PushRequest, key: StreamSlot.HeaderKey, jwt: String?) {
        if key != sharedKey {
            shared.removeAll(keepingCapacity: true)
            Self.append(&shared, "apns-topic", r.topic.utf8)
            Self.append(&shared, "apns-push-type", r.pushType.rawValue.utf8)
            Self.append(&shared, "apns-priority", String(r.priority).utf8)
            if let c = r.collapseId { Self.append(&shared, "apns-collapse-id", c.utf8) }
            if let x = r.expiration { Self.append(&shared, "apns-expiration", String(x).utf8) }
            if let jwt { Self.append(&shared, "authorization", "bearer \(jwt)".utf8) }
            sharedKey = key
        }
        bytes.removeAll(keepingCapacity: true)
        let prefix = PushRequest.devicePathPrefix.utf8
        Self.appendName(&bytes, ":path", unique: true)
        Self.appendLength(&bytes, prefix.count + r.token.hex.utf8.count)
        bytes.append(contentsOf: prefix)
        bytes.append(contentsOf: r.token.hex.utf8)
        Self.append(&bytes, "apns-id", r.apnsId.utf8, unique: true)
        Self.append(&bytes, "content-length", String(r.payload.count).utf8)
        bytes.append(contentsOf: shared)
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
