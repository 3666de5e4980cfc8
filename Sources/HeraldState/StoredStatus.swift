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
}
