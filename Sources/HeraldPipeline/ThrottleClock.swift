import Foundation

/// The clock the throttle reads: a monotonic one for rates (never jumps with NTP) and the wall
/// clock for the deadline and the silent-push ledger (shared with other processes, so it must be
/// real time). Injected so the unit tests of `SendGate` run on a fake clock without sleeping.
public protocol ThrottleClock: Sendable {
    /// Seconds on a monotonic scale.
    func monotonic() -> Double
    func now() -> Date
    func sleep(_ seconds: Double)
}

public struct SystemThrottleClock: ThrottleClock {
    public init() {}
    public func monotonic() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
    public func now() -> Date { Date() }
    public func sleep(_ seconds: Double) { if seconds > 0 { Thread.sleep(forTimeInterval: seconds) } }
}
