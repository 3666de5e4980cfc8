/// `throttle.rate` and `throttle.silent_rate`: a token bucket, refilled continuously at `rate`
/// tokens per second and holding at most `burst` (one second's worth by default, at least one
/// push, so a rate below 1/s still sends).
///
/// Pure: time is passed in (seconds on any monotonic scale), so the unit tests drive it with a
/// fake clock; `SendGate` feeds it a real one. A reservation may go into debt: a batch larger
/// than the bucket is allowed and the caller waits until the debt is paid back, which keeps the
/// long-run rate exact whatever the batch size.
public struct TokenBucket: Sendable {
    /// Tokens per second; 0 or less means unlimited.
    public let rate: Double
    public let burst: Double
    private var tokens: Double
    private var last: Double

    public init(rate: Double, burst: Double? = nil, now: Double) {
        self.rate = rate
        self.burst = burst ?? max(1, rate)
        self.tokens = self.burst
        self.last = now
    }

    public var isUnlimited: Bool { rate <= 0 }

    /// Tokens held at `now` (negative while a reservation's debt is being paid back).
    public func tokens(at now: Double) -> Double {
        guard !isUnlimited else { return .infinity }
        // Debt is paid back at `rate`; savings stop growing at `burst`. A clock that went back
        // (it should not: the clock is monotonic) adds nothing.
        return min(burst, tokens + max(0, now - last) * rate)
    }

    /// Takes `count` tokens at `now` and returns how many seconds the caller must wait before
    /// sending them (0: at once).
    public mutating func reserve(_ count: Int, now: Double) -> Double {
        guard !isUnlimited, count > 0 else { return 0 }
        tokens = tokens(at: now) - Double(count)
        last = max(last, now)
        return tokens >= 0 ? 0 : -tokens / rate
    }

    /// How long a reservation of `count` at `now` would make the caller wait, without taking anything.
    public func wait(for count: Int, now: Double) -> Double {
        guard !isUnlimited, count > 0 else { return 0 }
        let left = tokens(at: now) - Double(count)
        return left >= 0 ? 0 : -left / rate
    }

    /// How many pushes a reservation at `now` could send no later than `time`.
    public func affordable(now: Double, by time: Double) -> Int {
        guard !isUnlimited else { return Int.max }
        let n = (tokens(at: now) + max(0, time - now) * rate).rounded(.down)
        return n <= 0 ? 0 : n >= Double(Int.max / 2) ? Int.max / 2 : Int(n)
    }
}
