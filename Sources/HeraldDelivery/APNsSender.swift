import Dispatch
import Foundation
import HeraldCore
import Synchronization

/// The sending engine: `connections` HTTP/2 connections, each on its own Dispatch queue (thread),
/// herald's own connection on nghttp2 (`Nghttp2Worker` over CHTTP2Client), fed from one shared
/// queue and answering through another; device pushes or broadcasts (`PushDestination`). The caller
/// (the campaign runner's thread, which alone touches the state file) submits jobs it has already
/// committed as in flight and takes results back; it bounds how many are outstanding, so memory
/// does not grow with the audience.
///
/// The caller also steers it: `pause(until:)` (circuit breaker), `setStreamLimit` (adaptive
/// concurrency), `withdrawQueued` (abort or signal: what has not left yet goes back).
public final class APNsSender: @unchecked Sendable {
    // @unchecked: the workers are touched only by their own queues; everything else is Sendable.
    private let shared: EngineShared
    private let workers: [Nghttp2Worker]
    private let group = DispatchGroup()
    private let stopped = Atomic<Bool>(false)
    public let token: ProviderToken?
    public let streamsPerConnection: Int

    public convenience init(settings: ConnectionSettings, connections count: Int, token: ProviderToken?,
                            destination: PushDestination = .devices) throws(DeliveryError) {
        try self.init(settings: settings, connections: count, token: token, destination: destination, pool: 0, results: ResultQueue())
    }

    /// One pool of a `RoutingSender`: its results carry `pool` and go into `results`, the queue
    /// the owner of every pool waits on.
    init(settings: ConnectionSettings, connections count: Int, token: ProviderToken?, destination: PushDestination,
         pool: Int, results: ResultQueue) throws(DeliveryError) {
        let shared = EngineShared(streams: max(1, settings.maxStreams), token: token, results: PoolResults(pool: pool, queue: results))
        let endpoint = try Nghttp2Endpoint(settings)
        var workers: [Nghttp2Worker] = []
        for i in 0..<max(1, count) {
            workers.append(try Nghttp2Worker(id: i + 1, settings: settings, shared: shared, endpoint: endpoint, destination: destination))
        }
        self.shared = shared
        self.workers = workers
        self.token = token
        streamsPerConnection = max(1, settings.maxStreams)
        for w in workers {
            DispatchQueue(label: "herald.pool\(pool).connection.\(w.id)", qos: .userInitiated).async(group: group) { w.run() }
        }
    }

    deinit { shutdown() }

    public var connectionCount: Int { workers.count }

    /// Queues jobs for the connections; returns at once.
    public func submit(_ jobs: [PushJob]) {
        guard !jobs.isEmpty else { return }
        shared.feed.withLock { $0.append(jobs) }
        for w in workers { w.wake.signal() }
    }

    /// Results that arrived since the last call; waits up to `timeout` seconds for the first one.
    public func results(timeout: TimeInterval) -> [PushResult] { shared.results.queue.take(timeout: timeout) }

    /// Takes back every job no connection has started: they never left the process.
    public func withdrawQueued() -> [Int] { shared.feed.withLock { $0.removeAll() }.map(\.index) }

    /// Takes back the jobs no connection has started for which `keep` is true (one app's, say).
    public func withdrawQueued(where keep: (PushJob) -> Bool) -> [Int] {
        shared.feed.withLock { $0.remove(where: keep) }.map(\.index)
    }

    public func takeExpired() -> [Int] { shared.feed.withLock { $0.takeExpired() } }

    /// True once a connection got an answer refusing the credentials (`AbortScope.credentials`)
    /// and the connections stopped starting requests.
    public var halted: Bool { shared.halted.load(ordering: .relaxed) }

    /// `halted`: a single sender is one pool, whatever the number.
    public func halted(pool: Int) -> Bool { halted }

    /// Jobs not started: waiting for a stream, or held after their topic was refused (`AbortScope.topic`).
    public var queued: Int { shared.feed.withLock { $0.queued } }

    /// No new request starts before `date` (requests in flight carry on).
    public func pause(until date: Date) {
        let seconds = max(0, date.timeIntervalSinceNow)
        shared.pausedUntil.store(uptimeNanoseconds() + UInt64(seconds * 1e9), ordering: .relaxed)
        for w in workers { w.wake.signal() }
    }

    /// Streams each connection may keep in flight (never above `streams_per_connection`).
    public func setStreamLimit(_ n: Int) {
        shared.streamLimit.store(max(1, min(streamsPerConnection, n)), ordering: .relaxed)
        for w in workers { w.wake.signal() }
    }

    public var streamLimit: Int { shared.streamLimit.load(ordering: .relaxed) }

    /// Connections opened and JWTs signed so far (the runner adds its retries).
    public var counters: DeliveryCounters {
        var c = DeliveryCounters()
        c.connectionsOpened = shared.connectionsOpened.load(ordering: .relaxed)
        c.jwtsSigned = token?.signedCount ?? 0
        return c
    }

    /// Stops taking new jobs, lets the requests in flight finish (each bounded by the request
    /// timeout), closes the connections and waits for the threads.
    public func shutdown() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        stopStarting()
        group.wait()
    }

    /// The first half of `shutdown`, without the wait: a `RoutingSender` stops every pool
    /// starting requests before it waits for any.
    func stopStarting() {
        shared.stopped.store(true, ordering: .relaxed)
        for w in workers { w.wake.signal() }
    }

    /// Sends a batch and waits for every answer; results carry the request's index in `requests`.
    /// Once an answer halts the sender (`halted`), or refuses a topic (`AbortScope.topic`), the
    /// requests that never left (all of them, or the topic's) are dropped from the batch: they
    /// have no result. A convenience over the streaming interface for tools and tests.
    public func send(_ requests: [PushRequest]) throws(DeliveryError) -> [PushResult] {
        submit(requests.enumerated().map { PushJob(index: $0.offset, request: $0.element) })
        var out: [PushResult] = []
        out.reserveCapacity(requests.count)
        var expected = requests.count
        while out.count < expected {
            out += results(timeout: 1)
            expected -= halted ? withdrawQueued().count : shared.feed.withLock { $0.removeHeld() }.count
        }
        return out
    }
}

/// Where a sender's requests go (the paths and fields Apple documents for each).
public enum PushDestination: Sendable, Equatable {
    /// `POST /3/device/<token>` with `apns-id` and `apns-topic`
    /// (https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
    case devices
    /// `POST /4/broadcasts/apps/<bundle-id>` with `apns-channel-id` and `apns-request-id`, no
    /// `apns-topic` (https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
    /// Each request's bundle id is its own `PushRequest.topic` without the Live Activity suffix, so
    /// one sender carries broadcasts of several apps (docs/many-apps.md).
    case broadcasts
}
