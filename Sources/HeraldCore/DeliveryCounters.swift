/// Counters of the sending stage that the state file's recipient rows cannot give back: kept per
/// run so summary.json and the metrics file show them, and a regenerated summary keeps them.
public struct DeliveryCounters: Sendable, Equatable {
    /// TLS connections opened to APNs (reconnects included).
    public var connectionsOpened = 0
    /// Provider tokens (JWTs) signed.
    public var jwtsSigned = 0
    /// Attempts that ended retryable (429, 5xx, connection lost) and will be sent again.
    public var retries = 0
    /// Background pushes held back by the silent-push budget (`throttle.silent_over_budget`).
    public var throttleDeferrals = 0

    public init() {}

    public static func + (a: DeliveryCounters, b: DeliveryCounters) -> DeliveryCounters {
        var s = a
        s.connectionsOpened += b.connectionsOpened
        s.jwtsSigned += b.jwtsSigned
        s.retries += b.retries
        s.throttleDeferrals += b.throttleDeferrals
        return s
    }
}
