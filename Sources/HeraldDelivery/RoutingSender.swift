import Foundation
import HeraldCore

/// One campaign sending for several apps: a pool of connections per APNs endpoint and credentials,
/// each an `APNsSender`, all answering into one queue the send loop waits on. Each job goes through
/// the pool its `PushJob.pool` names, and its result carries that number (`PushResult.pool`;
/// connection numbers are per pool).
///
/// Why pools: "APNs doesn't support authentication tokens from multiple developer accounts over a
/// single connection" (https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns),
/// and a certificate covers one app, with "separate APNs connections for each app's notifications"
/// (https://developer.apple.com/documentation/usernotifications/establishing-a-certificate-based-connection-to-apns).
/// The apps of one team share a pool and its provider token; another team, a certificate app, and
/// the other environment's endpoint each get their own.
///
/// An answer refusing a pool's credentials halts that pool only (`halted(pool:)`); one refusing a
/// topic holds that topic's jobs in its pool and nothing else (`AbortScope`). At most
/// `window` (Σ connections × streams) requests are in flight.
public final class RoutingSender: PushSending, @unchecked Sendable {
    // @unchecked: `pools` is set once in init; each sender and the queue are thread-safe.

    /// What one pool is made of: what `APNsSender`'s init takes.
    public struct Pool: Sendable {
        public var settings: ConnectionSettings
        public var connections: Int
        /// The team's provider token, shared by its apps; nil for a certificate (`settings`).
        public var token: ProviderToken?
        public var destination: PushDestination

        public init(settings: ConnectionSettings, connections: Int, token: ProviderToken?, destination: PushDestination = .devices) {
            self.settings = settings; self.connections = connections; self.token = token; self.destination = destination
        }
    }

    private let pools: [APNsSender]
    private let queue = ResultQueue()

    /// Opens nothing yet: each pool connects when its first job comes.
    public init(pools: [Pool]) throws(DeliveryError) {
        guard !pools.isEmpty else { throw .engine("no connection pool to send through") }
        var senders: [APNsSender] = []
        for (number, p) in pools.enumerated() {
            senders.append(try APNsSender(settings: p.settings, connections: p.connections, token: p.token,
                                          destination: p.destination, pool: number, results: queue))
        }
        self.pools = senders
    }

    deinit { shutdown() }

    public var poolCount: Int { pools.count }
    public var connectionCount: Int { pools.reduce(0) { $0 + $1.connectionCount } }
    public var streamsPerConnection: Int { pools.map(\.streamsPerConnection).max() ?? 1 }
    public var window: Int { pools.reduce(0) { $0 + $1.window } }
    public func connections(pool: Int) -> Int { sender(pool).connectionCount }
    public func streams(pool: Int) -> Int { sender(pool).streamsPerConnection }

    /// Hands each job to the pool it names.
    public func submit(_ jobs: [PushJob]) {
        guard !jobs.isEmpty else { return }
        if pools.count == 1 || jobs.allSatisfy({ $0.pool == jobs[0].pool }) {
            sender(jobs[0].pool).submit(jobs)
            return
        }
        var byPool = [[PushJob]](repeating: [], count: pools.count)
        for job in jobs { byPool[checked(job.pool)].append(job) }
        for (number, some) in byPool.enumerated() where !some.isEmpty { pools[number].submit(some) }
    }

    public func results(timeout: TimeInterval) -> [PushResult] { queue.take(timeout: timeout) }

    public func withdrawQueued() -> [Int] { pools.flatMap { $0.withdrawQueued() } }
    public func withdrawQueued(where keep: (PushJob) -> Bool) -> [Int] { pools.flatMap { $0.withdrawQueued(where: keep) } }
    public func takeExpired() -> [Int] { pools.flatMap { $0.takeExpired() } }

    public func halted(pool: Int) -> Bool { sender(pool).halted }

    public func pause(until date: Date) { for p in pools { p.pause(until: date) } }
    public func pause(pool: Int, until date: Date) { sender(pool).pause(until: date) }
    public func setStreamLimit(_ n: Int) { for p in pools { p.setStreamLimit(n) } }
    public func setStreamLimit(pool: Int, _ n: Int) { sender(pool).setStreamLimit(n) }

    /// Connections opened over every pool; each distinct provider token's JWTs once (pools of one
    /// team on both endpoints may share one token).
    public var counters: DeliveryCounters {
        var c = DeliveryCounters()
        c.connectionsOpened = pools.reduce(0) { $0 + $1.counters.connectionsOpened }
        var seen = Set<ObjectIdentifier>()
        for p in pools {
            guard let t = p.token, seen.insert(ObjectIdentifier(t)).inserted else { continue }
            c.jwtsSigned += t.signedCount
        }
        return c
    }

    /// Every pool stops starting requests, then each lets its requests in flight finish.
    public func shutdown() {
        for p in pools { p.stopStarting() }
        for p in pools { p.shutdown() }
    }

    private func sender(_ pool: Int) -> APNsSender { pools[checked(pool)] }

    /// A pool number the caller did not create is its bug, not an APNs answer.
    private func checked(_ pool: Int) -> Int {
        precondition(pools.indices.contains(pool), "pool \(pool) does not exist (\(pools.count) pools)")
        return pool
    }
}
