import Crypto
import HeraldCore

/// The `apns-id` of every recipient of one run: RFC 4122 UUIDv5 (SHA-1, herald's namespace) of
/// "<seed>/<token>", lowercase as APNs requires, so a resend after an ambiguous failure is
/// recognisably the same notification. Reading makes one per audience row, so the
/// namespace and seed are hashed once here and each id costs a copy of that hash state, the
/// token's bytes and one 36-byte string: no interpolated string or intermediate arrays per id.
public struct APNsIdGenerator: Sendable {
    /// herald's UUIDv5 namespace (a fixed random UUID).
    static let namespace: [UInt8] = [0x6f, 0x3c, 0x1a, 0x52, 0x8e, 0x4d, 0x4b, 0x0e, 0x9a, 0x11, 0x5c, 0x27, 0xd2, 0x40, 0x81, 0xf3]

    private let prefix: Insecure.SHA1

    public init(seed: String) {
        var h = Insecure.SHA1()
        h.update(data: Self.namespace)
        h.update(data: Array((seed + "/").utf8))
        prefix = h
    }

    public func id(for token: DeviceToken) -> String {
        var h = prefix
        var hex = token.hex
        hex.withUTF8 { h.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        let digest = h.finalize()
        return digest.withUnsafeBytes { d in
            String(unsafeUninitializedCapacity: 36) { out in
                var o = 0
                for i in 0..<16 {
                    var byte = d[i]
                    if i == 6 { byte = (byte & 0x0F) | 0x50 }   // version 5
                    if i == 8 { byte = (byte & 0x3F) | 0x80 }   // RFC 4122 variant
                    if i == 4 || i == 6 || i == 8 || i == 10 { out[o] = UInt8(ascii: "-"); o += 1 }
                    out[o] = HexDigits.lowercase[Int(byte >> 4)]
                    out[o + 1] = HexDigits.lowercase[Int(byte & 0xF)]
                    o += 2
                }
                return o
            }
        }
    }
}
