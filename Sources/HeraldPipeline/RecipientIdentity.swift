import Crypto
import Foundation
import HeraldCore

/// Stable identifiers for a recipient's notification, the same on every attempt and every rerun,
/// so that a resend after an ambiguous failure is recognisably the same notification.
enum RecipientIdentity {
    /// herald's UUIDv5 namespace (a fixed random UUID).
    static let namespace: [UInt8] = [0x6f, 0x3c, 0x1a, 0x52, 0x8e, 0x4d, 0x4b, 0x0e, 0x9a, 0x11, 0x5c, 0x27, 0xd2, 0x40, 0x81, 0xf3]

    /// RFC 4122 UUIDv5 of "<campaign>/<run id>/<token>", lowercase as APNs requires for apns-id:
    /// the same on every attempt of a run (the run id is in the state file), different for a new
    /// run (`--new-run`, a new period) that sends the campaign again.
    static func apnsId(campaign: String, runId: String, token: DeviceToken) -> String {
        var h = Insecure.SHA1()
        h.update(data: namespace)
        h.update(data: Array("\(campaign)/\(runId)/\(token.hex)".utf8))
        var b = Array(h.finalize().prefix(16))
        b[6] = (b[6] & 0x0F) | 0x50
        b[8] = (b[8] & 0x3F) | 0x80
        return formatUUID(b)
    }

    /// The default collapse id: one per campaign, so a device shows a resent notification once.
    /// ≤ 64 bytes (Apple: BadCollapseId above that).
    static func collapseId(policy: CollapseIdPolicy, campaign: String) -> String? {
        switch policy {
        case .none: return nil
        case .fixed(let text): return text
        case .auto:
            let name = "herald:" + campaign
            if name.utf8.count <= 64 { return name }
            return "herald:" + hex(Array(SHA256.hash(data: Array(campaign.utf8)).prefix(16)))
        }
    }

    private static let digits = Array("0123456789abcdef".utf8)

    static func hex(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0xF)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// 16 bytes → canonical lowercase 8-4-4-4-12 (called once per recipient: no String(format:)).
    static func formatUUID(_ b: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (i, byte) in b.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out.append(digits[Int(byte >> 4)]); out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
