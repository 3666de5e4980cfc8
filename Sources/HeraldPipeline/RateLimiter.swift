import Foundation

/// `throttle.rate`: a token bucket over all connections, refilled continuously, one second deep.
final class RateLimiter {
    private let perSecond: Double
    private var tokens: Double
    private var last: Date

    init(perSecond: Double) {
        self.perSecond = perSecond
        self.tokens = perSecond
        self.last = Date()
    }

    /// Blocks until `count` sends fit the rate. A rate of 0 means unlimited.
    func acquire(_ count: Int) {
        guard perSecond > 0 else { return }
        let need = Double(count)
        while true {
            let now = Date()
            tokens = min(max(perSecond, need), tokens + now.timeIntervalSince(last) * perSecond)
            last = now
            if tokens >= need { tokens -= need; return }
            Thread.sleep(forTimeInterval: min(1.0, (need - tokens) / perSecond))
        }
    }
}
