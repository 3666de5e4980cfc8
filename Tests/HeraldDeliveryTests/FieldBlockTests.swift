import HeraldCore
@testable import HeraldDelivery
import Testing

/// The header block the sender hands to CHTTP2Client: `:path` first, every field once,
/// and the fields that differ on every request (the path, apns-id) flagged so HPACK does not index
/// them (HTTP2Client.h, h2_submit).
@Suite struct FieldBlockTests {
    /// (name, value, flagged as unique) in the order packed.
    static func unpack(_ bytes: [UInt8]) -> [(String, String, Bool)] {
        var out: [(String, String, Bool)] = []
        var i = 0
        while i < bytes.count {
            let unique = bytes[i] & 0x80 != 0
            let nl = Int(bytes[i] & 0x7F) << 8 | Int(bytes[i + 1])
            let name = String(decoding: bytes[(i + 2)..<(i + 2 + nl)], as: UTF8.self)
            i += 2 + nl
            let vl = Int(bytes[i]) << 8 | Int(bytes[i + 1])
            let value = String(decoding: bytes[(i + 2)..<(i + 2 + vl)], as: UTF8.self)
            i += 2 + vl
            out.append((name, value, unique))
        }
        return out
    }

    @Test func thePathAndApnsIdAreFlaggedUniqueAndNothingElseIs() {
        let r = StreamingSenderTests.jobs(7...7)[0].request
        var block = FieldBlock()
        let key = FieldBlock.SharedKey(generation: 1, topic: r.topic, pushType: r.pushType, priority: r.priority,
                                       collapseId: r.collapseId, expiration: r.expiration)
        block.prepare(r, for: .devices, key: key, jwt: "header.claims.signature")
        let fields = Self.unpack(block.bytes)
        #expect(fields.first?.0 == ":path" && fields.first?.1 == "/3/device/" + String(format: "%064x", 7))
        #expect(Set(fields.filter(\.2).map(\.0)) == [":path", "apns-id"], "\(fields)")
        #expect(fields.map(\.0) == [":path", "apns-id", "content-length", "apns-topic", "apns-push-type", "apns-priority",
                                    "apns-collapse-id", "authorization"], "\(fields.map(\.0))")
        #expect(fields.contains { $0.0 == "authorization" && $0.1 == "bearer header.claims.signature" })
    }

    /// A broadcast (https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns):
    /// the app's path, the channel and request ids, push type liveactivity, priority and expiration
    /// always, and no apns-topic or apns-id.
    @Test func aBroadcastCarriesItsChannelAndRequestIdAndNoTopic() {
        var r = StreamingSenderTests.jobs(9...9)[0].request
        r.apnsId = "0d5a1b2c-0000-4000-8000-000000000009"
        r.priority = 5
        r.topic = "com.example.game.push-type.liveactivity"
        var block = FieldBlock()
        let key = FieldBlock.SharedKey(generation: 1, topic: r.topic, pushType: r.pushType, priority: r.priority,
                                       collapseId: nil, expiration: nil)
        block.prepare(r, for: .broadcasts, key: key, jwt: "h.c.s")
        let fields = Self.unpack(block.bytes)
        #expect(fields.map(\.0) == [":path", "apns-channel-id", "apns-request-id", "content-length", "apns-push-type", "apns-priority",
                                    "apns-expiration", "authorization"], "\(fields.map(\.0))")
        let value = { (name: String) in fields.first { $0.0 == name }?.1 }
        #expect(value(":path") == "/4/broadcasts/apps/com.example.game")
        #expect(value("apns-channel-id") == r.token.hex && value("apns-request-id") == r.apnsId)
        #expect(value("apns-push-type") == "liveactivity" && value("apns-priority") == "5" && value("apns-expiration") == "0")
        #expect(Set(fields.filter(\.2).map(\.0)) == ["apns-channel-id", "apns-request-id"], "\(fields)")
    }

    /// One sender carries the broadcasts of several apps (docs/many-apps.md): each request's path
    /// names its own app's bundle id (its topic without `.push-type.liveactivity`), also when the
    /// apps alternate and their packed fields come from the cache.
    @Test func eachBroadcastGoesToItsOwnAppsPath() {
        var block = FieldBlock()
        let apps = ["com.acme.app", "com.partner.app", "com.acme.ipad"]
        for round in 0..<3 {
            for (i, bundle) in apps.enumerated() {
                var r = StreamingSenderTests.jobs((i + 1)...(i + 1))[0].request
                r.pushType = .liveactivity
                r.topic = bundle + ".push-type.liveactivity"
                let key = FieldBlock.SharedKey(generation: 1, topic: r.topic, pushType: r.pushType, priority: r.priority,
                                               collapseId: nil, expiration: nil)
                block.prepare(r, for: .broadcasts, key: key, jwt: "h.c.s")
                let fields = Self.unpack(block.bytes)
                #expect(fields.filter { $0.0 == ":path" }.map(\.1) == ["/4/broadcasts/apps/" + bundle], "round \(round): \(fields)")
                #expect(fields.first?.0 == ":path" && !fields.contains { $0.0 == "apns-topic" })
            }
        }
    }
}
