import Foundation

/// Exponential backoff with jitter, the one schedule for retried recipients, reconnects and the
/// circuit breaker. Jitter (a random 50–100 % of the step) keeps retries of one burst from coming
/// back as one burst. `random` is injectable so unit tests see exact delays.
public struct RetryBackoff: Sendable {
    public var base: TimeInterval
    public var cap: TimeInterval
    public var random: @Sendable (ClosedRange<Double>) -> Double

    public init(base: TimeInterval, cap: TimeInterval, random: @escaping @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) }) {
        self.base = base; self.cap = cap; self.random = random
    }

    /// The wait before attempt `attempt + 1` (attempt 1 waits about `base`).
    public func delay(attempt: Int) -> TimeInterval {
        let exponent = Double(min(max(0, attempt - 1), 30))
        let step = min(cap, base * pow(2.0, exponent))
        return step * random(0.5...1.0)
    }

    /// Recipients answered 429/5xx or lost with their connection: from 1 s, capped at 5 minutes
    /// (Apple: "After 15 minutes, you can retry … 5XX … you may employ a back-off technique",
    /// https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns).
    public static let recipient = RetryBackoff(base: 1, cap: 300)
    /// TooManyRequests is about one device token: Apple says "retry with a delay", so that token
    /// waits longer than a server hiccup would make it.
    public static let tooManyRequests = RetryBackoff(base: 2, cap: 600)
    /// Reconnecting after a failed connect: from 100 ms, capped at 30 s.
    public static let reconnect = RetryBackoff(base: 0.1, cap: 30)
    /// The circuit breaker's global pause: from 1 s, capped at 60 s.
    public static let breaker = RetryBackoff(base: 1, cap: 60)
}
