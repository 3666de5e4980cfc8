/// How many streams each connection may keep in flight, adjusted to APNs' pushback: fewer when
/// 429s and 5xx rise, growing back when they fall. Apple: "An error code beginning with 4XX slows
/// down your ability to send notifications … adjust your throughput accordingly" (https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns).
/// Additive increase, multiplicative decrease, decided once per `sample` responses. Pure.
public struct AdaptiveConcurrency: Sendable {
    public let maximum: Int
    public let minimum: Int
    public let sample: Int
    /// Pushback fraction above which the limit shrinks, and below which it grows.
    public let shrinkAbove: Double
    public let growBelow: Double
    public private(set) var limit: Int
    private var seen = 0
    private var pushback = 0

    public init(maximum: Int, minimum: Int? = nil, sample: Int = 200, shrinkAbove: Double = 0.05, growBelow: Double = 0.01) {
        self.maximum = max(1, maximum)
        self.minimum = max(1, min(self.maximum, minimum ?? max(1, maximum / 10)))
        self.sample = max(1, sample); self.shrinkAbove = shrinkAbove; self.growBelow = growBelow
        limit = self.maximum
    }

    /// Records one response (`pushback`: 429, 5xx or a lost connection); returns the new limit
    /// when it changes.
    public mutating func record(pushback isPushback: Bool) -> Int? {
        seen += 1
        if isPushback { pushback += 1 }
        guard seen >= sample else { return nil }
        let fraction = Double(pushback) / Double(seen)
        seen = 0; pushback = 0
        let old = limit
        if fraction > shrinkAbove {
            limit = max(minimum, Int(Double(limit) * 0.7))
        } else if fraction < growBelow {
            limit = min(maximum, limit + max(1, maximum / 10))
        }
        return limit == old ? nil : limit
    }
}
