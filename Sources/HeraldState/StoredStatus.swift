import Foundation
import HeraldCore

/// A recipient's state in the state file. Finer than the report statuses: `inflight` (committed
/// before the request leaves; outcome unknown after a crash) and `retry` (waiting for `retry_at`)
/// both show as `pending` in reports.
public enum StoredStatus: String, Sendable, CaseIterable {
    case pending, inflight, retry, sent, failed, suppressed, throttled

    public var reportStatus: RecipientStatus {
        switch self {
        case .pending, .inflight, .retry: return .pending
        case .sent: return .sent
        case .failed: return .failed
        case .suppressed: return .suppressed
        case .throttled: return .throttled
        }
    }

    public var isFinal: Bool { reportStatus != .pending }

    /// The raw value's bytes, for binding without a copy (they live as long as the program).
    var staticText: UnsafeRawBufferPointer {
        let text: StaticString = switch self {
        case .pending: "pending"
        case .inflight: "inflight"
        case .retry: "retry"
        case .sent: "sent"
        case .failed: "failed"
        case .suppressed: "suppressed"
        case .throttled: "throttled"
        }
        return UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
    }

    /// The status a column's bytes spell, without making a String of them.
    public init?(bytes: UnsafeRawBufferPointer) {
        // The first byte and the length tell every status apart; the rest is still compared.
        let found: (StoredStatus, StaticString)? = switch (bytes.first, bytes.count) {
        case (UInt8(ascii: "p"), 7): (.pending, "pending")
        case (UInt8(ascii: "i"), 8): (.inflight, "inflight")
        case (UInt8(ascii: "r"), 5): (.retry, "retry")
        case (UInt8(ascii: "s"), 4): (.sent, "sent")
        case (UInt8(ascii: "f"), 6): (.failed, "failed")
        case (UInt8(ascii: "s"), 10): (.suppressed, "suppressed")
        case (UInt8(ascii: "t"), 9): (.throttled, "throttled")
        default: nil
        }
        guard let (status, text) = found, memcmp(text.utf8Start, bytes.baseAddress!, bytes.count) == 0 else { return nil }
        self = status
    }
}
