import Crypto
import Foundation
import HeraldCore

/// Stable identifiers for a recipient's notification, the same on every attempt and every rerun,
/// so that a resend after an ambiguous failure is recognisably the same notification.
enum RecipientIdentity {
    /// herald's UUIDv5 namespace (a fixed random UUID).
    static let namespace: [UInt8] = [0x6f, 0x3c, 0x1a, 0x52, 0x8e, 0x4d, 0x4b, 0x0e, 0x9a, 0x11, 0x5c, 0x27, 0xd2, 0x40, 0x81, 0xf3]

    /// RFC 4122 UUIDv5 of "<campaign>/<token>", lowercase as APNs requires for apns-id.
    static func apnsId(campaign: String, token: DeviceToken) -> String {
        var h = Insecure.SHA1()
        h.update(data: namespace)
        h.update(data: Array("\(campaign)/\(token.hex)".utf8))
        var b = Array(h.finalize().prefix(16))
        b[6] = (b[6] & 0x0F) | 0x50
        b[8] = (b[8] & 0x3F) | 0x80
        let hex = b.map { String(format: "%02x", $0) }.joined()
        let p = Array(hex)
        return "\(String(p[0..<8]))-\(String(p[8..<12]))-\(String(p[12..<16]))-\(String(p[16..<20]))-\(String(p[20..<32]))"
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
            let digest = SHA256.hash(data: Array(campaign.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
            return "herald:" + digest
        }
    }
}
