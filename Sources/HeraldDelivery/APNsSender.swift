import Dispatch
import Foundation
import HeraldCore
import Synchronization

/// The sending engine: `connections` HTTP/2 connections, each on its own Dispatch queue (thread):
/// a libcurl multi handle (`ConnectionWorker`), or with `engine: .nghttp2` herald's own
/// connection on nghttp2 (`Nghttp2Worker`); fed from one shared queue and answering through another. The caller
/// (the campaign runner's thread, which alone touches the state file) submits jobs it has already
/// committed as in flight and takes results back; it bounds how many are outstanding, so memory
/// does not grow with the audience.
///
/// The caller also steers it: `pause(until:)` (circuit breaker), `setStreamLimit` (adaptive
/// concurrency), `withdrawQueued` (abort or signal: what has not left yet goes back).
public final class APNsSender: @unchecked Sendable {
    // @unchecked: the workers are touched only by their own queues; everything else is Sendable.
    private let shared: EngineShared
    private let workers: [any SenderThread]
    private let group = DispatchGroup()
    private let stopped = Atomic<Bool>(false)
    public let token: ProviderToken?
    public let streamsPerConnection: Int

    public init(settings: ConnectionSettings, connections count: Int, token: ProviderToken?,
                engine: DeliveryEngine = .libcurl) throws(DeliveryError) {
        shared = EngineShared(streams: max(1, settings.maxStreams), token: token)
        var ws: [any SenderThread] = []
        switch engine {
        case .libcurl:
            guard CurlGlobal.initialised else { throw .curl(operation: "curl_global_init", code: -1, message: "libcurl could not be initialised") }
            // Before the first connection; `herald run` has decided already, with the job's setting.
            LibcurlShims.engage(environment: ProcessInfo.processInfo.environment)
            for i in 0..<max(1, count) { ws.append(try ConnectionWorker(id: i + 1, settings: settings, shared: shared)) }
        case .nghttp2:
            let tunnel = try ProxyTunnel.resolve(settings.proxy, apnsHost: URLComponents(string: settings.baseURL)?.host ?? "")
            let tls = try Nghttp2TLS(trust: settings.trust, identity: settings.identity)
            for i in 0..<max(1, count) { ws.append(try Nghttp2Worker(id: i + 1, settings: settings, shared: shared, tls: tls, tunnel: tunnel)) }
        }
        workers = ws
        self.token = token
        streamsPerConnection = max(1, settings.maxStreams)
        for w in workers {
            DispatchQueue(label: "herald.connection.\(w.id)", qos: .userInitiated).async(group: group) { w.run() }
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
    public func results(timeout: TimeInterval) -> [PushResult] { shared.results.take(timeout: timeout) }

    /// Takes back every job no connection has started: they never left the process.
    public func withdrawQueued() -> [Int] { shared.feed.withLock { $0.removeAll() }.map(\.index) }

    public func takeExpired() -> [Int] { shared.feed.withLock { $0.takeExpired() } }

    /// True once a connection got an abort-class answer and stopped starting requests.
    public var halted: Bool { shared.halted.load(ordering: .relaxed) }

    /// Jobs waiting for a stream.
    public var queued: Int { shared.feed.withLock { $0.count } }

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

    /// What the connections did that only tests look at (`SenderProbe`), once the workers have stopped.
    var probe: SenderProbe { shared.probe.withLock { $0 } }

    /// Stops taking new jobs, lets the requests in flight finish (each bounded by the request
    /// timeout), closes the connections and waits for the threads.
    public func shutdown() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        shared.stopped.store(true, ordering: .relaxed)
        for w in workers { w.wake.signal() }
        group.wait()
    }

    /// Sends a batch and waits for every answer; results carry the request's index in `requests`.
    /// A convenience over the streaming interface for tools and tests.
    public func send(_ requests: [PushRequest]) throws(DeliveryError) -> [PushResult] {
        submit(requests.enumerated().map { PushJob(index: $0.offset, request: $0.element) })
        var out: [PushResult] = []
        out.reserveCapacity(requests.count)
        while out.count < requests.count {
            out += results(timeout: 1)
        }
        return out
    }
}

/// One connection's thread of the sender: a libcurl multi handle (`ConnectionWorker`) or an
/// nghttp2 connection (`Nghttp2Worker`).
protocol SenderThread: AnyObject, Sendable {
    var id: Int { get }
    var wake: WakePipe { get }
    func run()
}

extension ConnectionWorker: SenderThread {}
extension Nghttp2Worker: SenderThread {}
