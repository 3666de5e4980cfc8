import Foundation
import HeraldCore

/// A recipient's state in the state file. Finer than the report statuses: `inflight` (committed
/// before the request leaves; outcome unknown after a crash), `retry` (waiting for `retry_at`) and
/// `scheduled` (never attempted, waiting for its local window: `retry_at` is its due time) all
/// show as `pending` in reports.
public enum StoredStatus: String, Sendable, CaseIterable {
    case pending, inflight, retry, sent, failed, suppressed, throttled, scheduled, cancelled
    /// An experiment's holdout: never sent (final).
    case heldOut = "held_out"
    /// Outside an experiment's test, waiting for its winner to be chosen (final until then).
    case awaitingWinner = "awaiting_winner"

    public var reportStatus: RecipientStatus {
        switch self {
        case .pending, .inflight, .retry, .scheduled: return .pending
        case .sent: return .sent
        case .failed: return .failed
        case .suppressed: return .suppressed
        case .throttled: return .throttled
        case .cancelled: return .cancelled
        case .heldOut: return .heldOut
        case .awaitingWinner: return .awaitingWinner
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
        case .scheduled: "scheduled"
        case .cancelled: "cancelled"
        case .heldOut: "held_out"
        case .awaitingWinner: "awaiting_winner"
        }
        return UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
    }

    /// The status a column's bytes spell, without making a String of them.
    public init?(bytes: UnsafeRawBufferPointer) {
        guard let found = Self.allCases.first(where: { s in
            let text = s.staticText
            return text.count == bytes.count && memcmp(text.baseAddress!, bytes.baseAddress!, bytes.count) == 0
        }) else { return nil }
        self = found
    }
}
