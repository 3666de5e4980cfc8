import Synchronization

/// Per-connection state the behaviour may consult: the connection's number (for the log) and a
/// cache of provider-token verdicts.
///
/// Clients reuse one JWT for up to an hour on every stream of a connection, so verifying the
/// ECDSA signature once per distinct token string and connection keeps the signature check from
/// dominating CPU under load. The cache is bounded: a well-behaved client changes its token at
/// most every 20 minutes, so a handful of entries suffice.
public final class SimulatorConnection: Sendable {
    /// 1-based, in accept order.
    public let id: Int
    private let verdicts = Mutex<[String: ProviderTokenVerdict]>([:])
    static let cacheLimit = 16

    public init(id: Int) { self.id = id }

    /// The cached verdict for `jwt`, computing it with `verify` on first sight.
    public func providerTokenVerdict(for jwt: String, verify: (String) -> ProviderTokenVerdict) -> ProviderTokenVerdict {
        if let cached = verdicts.withLock({ $0[jwt] }) { return cached }
        // Verify outside the lock: two streams racing on a new token both verify, harmlessly.
        let verdict = verify(jwt)
        verdicts.withLock { cache in
            if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[jwt] = verdict
        }
        return verdict
    }
}

/// Hands out connection numbers.
final class ConnectionCounter: Sendable {
    private let last = Atomic<Int>(0)
    func next() -> Int { last.add(1, ordering: .relaxed).newValue }
}
