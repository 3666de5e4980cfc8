import Foundation

/// Pauses sending globally when most of the last `window` responses are server errors (5xx) or
/// lost connections, instead of burning through the audience (and its retry budget) against an
/// APNs that is down. Each pause is longer than the last (`RetryBackoff.breaker`) until a window
/// is healthy again. Pure: the caller passes the time and applies the pause.
///
/// Transport failures are counted once per connection loss by the caller: one reset that fails
/// 200 streams at once is one bad event, not 200.
public struct CircuitBreaker: Sendable {
    public let window: Int
    /// Fraction of bad responses in a full window that opens the breaker ("most": over half).
    public let threshold: Double
    public var backoff: RetryBackoff
    private var ring: [Bool]
    private var next = 0
    private var filled = 0
    private var bad = 0
    /// Consecutive openings without a healthy window in between.
    public private(set) var openings = 0
    public private(set) var pausedUntil: Date?

    public init(window: Int = 100, threshold: Double = 0.5, backoff: RetryBackoff = .breaker) {
        self.window = max(1, window); self.threshold = threshold; self.backoff = backoff
        ring = Array(repeating: false, count: max(1, window))
    }

    /// Records one response; returns the time until which sending pauses when this one opens the breaker.
    public mutating func record(failure: Bool, now: Date) -> Date? {
        if filled == window, ring[next] { bad -= 1 }
        ring[next] = failure
        if failure { bad += 1 }
        next = (next + 1) % window
        filled = min(window, filled + 1)
        guard filled == window else { return nil }
        if Double(bad) > threshold * Double(window) {
            openings += 1
            let until = now.addingTimeInterval(backoff.delay(attempt: openings))
            pausedUntil = until
            // A fresh window must fill before it can open again: one storm, one pause.
            ring = Array(repeating: false, count: window); next = 0; filled = 0; bad = 0
            return until
        }
        if bad == 0 { openings = 0 }
        return nil
    }

    public func isOpen(now: Date) -> Bool { pausedUntil.map { now < $0 } ?? false }
}
