import Foundation
import HeraldCore

/// What the campaign's send loop needs from a sender: take requests, hand back answers, and be
/// steered (paused by the circuit breaker, narrowed by adaptive concurrency, emptied on a stop).
/// `APNsSender` sends device pushes and broadcasts over streaming HTTP/2 connections; the
/// protocol is the send loop's seam.
public protocol PushSending: AnyObject {
    var connectionCount: Int { get }
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
}

extension APNsSender: PushSending {}
