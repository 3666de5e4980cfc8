import Foundation
import HeraldCore

/// What the campaign's send loop needs from a sender: take requests, hand back answers, and be
/// steered (paused by the circuit breaker, narrowed by adaptive concurrency, emptied on a stop).
/// `APNsSender` is one pool of streaming HTTP/2 connections (device pushes or broadcasts);
/// `RoutingSender` sends through several, one per APNs endpoint and credentials, each job through
/// the pool its `PushJob.pool` names. The protocol is the send loop's seam.
public protocol PushSending: AnyObject {
    /// Connections over every pool.
    var connectionCount: Int { get }
    /// Streams a connection may keep in flight (the largest over the pools).
    var streamsPerConnection: Int { get }
    /// Queues jobs; returns at once.
    func submit(_ jobs: [PushJob])
    /// Results that arrived since the last call; waits up to `timeout` seconds for the first one.
    func results(timeout: TimeInterval) -> [PushResult]
    /// Takes back every job not started: they never left the process.
    func withdrawQueued() -> [Int]
    /// The jobs a connection did not start because their `notAfter` had passed: they never left.
    func takeExpired() -> [Int]
    /// No new request starts before `date`.
    func pause(until date: Date)
    /// Requests each connection may keep in flight.
    func setStreamLimit(_ n: Int)
    /// Connections opened and JWTs signed so far.
    var counters: DeliveryCounters { get }
    /// Lets the requests in flight finish and stops.
    func shutdown()

    /// Pools (`PushJob.pool` runs from 0 to `poolCount - 1`).
    var poolCount: Int { get }
    /// Requests in flight at most: the sum over the pools of connections × streams per connection.
    var window: Int { get }
    /// Connections of one pool.
    func connections(pool: Int) -> Int
    /// Streams per connection of one pool.
    func streams(pool: Int) -> Int
    /// Takes back the jobs not started for which `keep` is true (one app's, after APNs refused
    /// its topic): they never left the process.
    func withdrawQueued(where keep: (PushJob) -> Bool) -> [Int]
    /// True once an answer refused the pool's credentials (`AbortScope.credentials`): the pool
    /// starts no more requests. A refused topic does not halt its pool.
    func halted(pool: Int) -> Bool
    /// No new request on one pool starts before `date`.
    func pause(pool: Int, until date: Date)
    /// Requests each connection of one pool may keep in flight.
    func setStreamLimit(pool: Int, _ n: Int)
}

/// A sender of one pool: what each per-pool question means for it.
extension PushSending {
    public var poolCount: Int { 1 }
    public var window: Int { connectionCount * streamsPerConnection }
    public func connections(pool: Int) -> Int { connectionCount }
    public func streams(pool: Int) -> Int { streamsPerConnection }
    /// A sender that cannot choose takes back every queued job, a superset: safe, because a
    /// withdrawn job never left and the send loop puts it back to pending.
    public func withdrawQueued(where keep: (PushJob) -> Bool) -> [Int] { withdrawQueued() }
    public func halted(pool: Int) -> Bool { false }
    public func pause(pool: Int, until date: Date) { pause(until: date) }
    public func setStreamLimit(pool: Int, _ n: Int) { setStreamLimit(n) }
}

extension APNsSender: PushSending {}
