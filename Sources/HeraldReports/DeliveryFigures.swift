import HeraldCore
import HeraldState

/// Figures gathered while the delivery rows stream past, for summary.json and summary.html:
/// latency percentiles and the send rate over time. Memory is bounded by the run's length in
/// seconds and its distinct latencies in ms, never by the audience.
public struct DeliveryFigures: Sendable, Equatable {
    /// Latency (ms) of each recipient's last answered attempt → recipients.
    public var latencyHistogram: [Int: Int] = [:]
    /// Recipients sent, by the UNIX second of their (last, successful) attempt.
    public var sentPerSecond: [Int64: Int] = [:]
    /// 410 Unregistered / ExpiredToken this run (unregistered.csv).
    public var unregistered = 0
    /// BadDeviceToken / DeviceTokenNotForTopic this run (rejected-tokens.csv).
    public var rejectedTokens = 0

    public init() {}

    /// Reasons that go to rejected-tokens.csv: often a sandbox/production or topic mix-up rather
    /// than a dead token, so kept apart from unregistered.csv.
    public static let rejectedReasons: Set<String> = ["BadDeviceToken", "DeviceTokenNotForTopic"]

    static func isUnregistered(_ d: DeliveryRow) -> Bool { d.status == .failed && d.httpStatus == 410 }
    static func isRejected(_ d: DeliveryRow) -> Bool { d.status == .failed && rejectedReasons.contains(d.reason) }

    mutating func add(_ d: DeliveryRow, attemptSeconds: inout AttemptSecondReader) {
        if let l = d.latencyMs, d.httpStatus != nil { latencyHistogram[l, default: 0] += 1 }
        if d.status == .sent, let at = d.lastAttemptAt, let second = attemptSeconds.second(of: at) {
            sentPerSecond[second, default: 0] += 1
        }
        if Self.isUnregistered(d) { unregistered += 1 }
        if Self.isRejected(d) { rejectedTokens += 1 }
    }

    /// The latency at or below which `fraction` of the answered recipients fall (nearest rank).
    public func latencyPercentile(_ fraction: Double) -> Int? {
        let total = latencyHistogram.values.reduce(0, +)
        guard total > 0 else { return nil }
        let rank = max(1, Int((fraction * Double(total)).rounded(.up)))
        var seen = 0
        for (ms, n) in latencyHistogram.sorted(by: { $0.key < $1.key }) {
            seen += n
            if seen >= rank { return ms }
        }
        return latencyHistogram.keys.max()
    }

    /// The send rate as at most `maxBars` buckets of whole seconds: (bucket start, bucket seconds, sends).
    public func sendRate(maxBars: Int = 60) -> (start: Int64, seconds: Int64, counts: [Int])? {
        guard let first = sentPerSecond.keys.min(), let last = sentPerSecond.keys.max() else { return nil }
        let span = last - first + 1
        let width = max(1, (span + Int64(maxBars) - 1) / Int64(maxBars))
        var counts = [Int](repeating: 0, count: Int((span + width - 1) / width))
        for (second, n) in sentPerSecond { counts[Int((second - first) / width)] += n }
        return (first, width, counts)
    }
}

/// The UNIX second of a stored attempt time (ISO 8601 text). Rows in audience order share their
/// claim's time by the hundred (a chunk is claimed at once), so the last text parsed is kept:
/// parsing every row was 1.3 % of a run's instructions (callgrind, 5,000 stand-in pushes).
struct AttemptSecondReader {
    private var lastText: String?
    private var lastSecond: Int64?

    mutating func second(of text: String) -> Int64? {
        if text != lastText {
            lastText = text
            lastSecond = RegistrationTime.iso8601Milliseconds(text).map { $0 / 1000 }
        }
        return lastSecond
    }
}
