import Foundation
import HeraldCore

/// APNs error bodies: `{"reason":"…"}`, plus `"timestamp"` (ms) on 410
/// (https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns).
enum ResponseBody {
    struct Parsed: Decodable { var reason: String?; var timestamp: Int64? }
    static func parse(_ bytes: [UInt8]) -> Parsed? {
        guard !bytes.isEmpty else { return nil }
        return try? JSONDecoder().decode(Parsed.self, from: Data(bytes))
    }

    /// An answer as the sender records it: the status and apns-id, and for anything but 200 the
    /// reason and timestamp its body carries (a 200's body is not read).
    static func outcome(status: Int, apnsId: String?, body: () -> [UInt8]) -> PushOutcome {
        let parsed = status == 200 ? nil : parse(body())
        return .answered(status: status, apnsId: apnsId, reason: parsed?.reason.map { APNsReason($0) }, timestamp: parsed?.timestamp)
    }
}
