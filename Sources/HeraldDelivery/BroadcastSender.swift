internal import CCurl
import Foundation
import HeraldCore
import Synchronization

/// Sends broadcast pushes, one request per channel, as Apple describes them
/// (https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns):
/// `POST /4/broadcasts/apps/<bundle-id>` with `apns-channel-id`, `apns-request-id` (the
/// recipient's stable id, so a resend after a crash is recognisably the same request),
/// `apns-push-type: liveactivity`, and the required `apns-expiration` and `apns-priority`; no
/// `apns-topic` (the bundle id is in the path). APNs echoes `apns-request-id`.
///
/// Not the streaming sender: its request fields and libcurl shims are built for
/// `/3/device/<token>` and `apns-id`, and a campaign has a handful of channels (one per game or
/// event), not millions of tokens. Each of `connections` workers keeps one HTTP/2 connection
/// (`HTTPSession`, libcurl's connection cache) and sends one request at a time on it.
public final class BroadcastSender: @unchecked Sendable {
    // @unchecked: the workers' sessions are touched only by their own threads; the rest is Sendable.
    private let shared: EngineShared
    private let settings: ConnectionSettings
    private let url: String
    private let group = DispatchGroup()
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    public let connectionCount: Int
    public var streamsPerConnection: Int { 1 }

    /// `bundleId`: the app's bundle id (the topic without a push-type suffix).
    public init(settings: ConnectionSettings, bundleId: String, connections: Int, token: ProviderToken?) throws(DeliveryError) {
        guard CurlGlobal.initialised else { throw .curl(operation: "curl_global_init", code: -1, message: "libcurl could not be initialised") }
        shared = EngineShared(streams: 1, token: token)
        self.settings = settings
        url = settings.baseURL + "/4/broadcasts/apps/" + bundleId
        connectionCount = max(1, connections)
        for id in 1...connectionCount {
            DispatchQueue(label: "herald.broadcast.\(id)", qos: .userInitiated).async(group: group) { [self] in work(connection: id) }
        }
    }

    deinit { shutdown() }

    /// The request for one channel: `r.token` carries the channel id (`DeviceToken(broadcastChannel:)`).
    static func call(_ r: PushRequest, url: String, jwt: String?, settings: ConnectionSettings) -> HTTPCall {
        var headers = ["apns-channel-id: \(r.token.hex)", "apns-request-id: \(r.apnsId)", "apns-push-type: \(PushType.liveactivity.rawValue)",
                       // Both required for a broadcast; 0 (attempt once, store nothing) is the one
                       // expiration every channel takes, No Message Stored ones included.
                       "apns-priority: \(r.priority)", "apns-expiration: \(r.expiration ?? 0)"]
        if let jwt { headers.append("authorization: bearer \(jwt)") }
        // apns.connect_timeout bounds the connect, apns.request_timeout the whole request, as for device pushes.
        var call = HTTPCall(method: "POST", url: url, headers: headers, body: r.payload, timeoutSeconds: Double(settings.requestTimeoutMs) / 1000)
        call.connectTimeoutSeconds = Double(settings.connectTimeoutMs) / 1000
        call.trust = settings.trust
        call.identity = settings.identity
        call.proxy = settings.proxy
        return call
    }

    /// What a worker keeps between requests: its connection, and the reactions the device-push
    /// connections have too (`ConnectionReactions`): a connect that fails backs off before the
    /// next try, and answers asking for a new connection open at most one per `renewalInterval`,
    /// so a burst of 503s does not become a burst of TLS handshakes.
    private struct Worker {
        var session = HTTPSession()
        var failureEvent = 0
        var reactions = ConnectionReactions()

        /// The next request goes on a fresh connection.
        mutating func renew(now: UInt64) {
            session = HTTPSession()
            reactions.renewed(now: now)
        }
    }

    private func work(connection: Int) {
        var w = Worker()
        while !stopped.load(ordering: .relaxed) {
            let resumeAt = max(shared.pausedUntil.load(ordering: .relaxed), w.reactions.reconnectAt)
            let now = uptimeNanoseconds()
            if shared.halted.load(ordering: .relaxed) || resumeAt > now {
                _ = wake.wait(timeout: .now() + .milliseconds(resumeAt > now ? Int(min(100, (resumeAt - now) / 1_000_000) + 1) : 100))
                continue
            }
            guard let job = shared.feed.withLock({ $0.take(1).first }) else {
                _ = wake.wait(timeout: .now() + .milliseconds(100))
                continue
            }
            var jwt: String?
            if let token = shared.token {
                do { jwt = try token.current() } catch {
                    shared.results.push([PushResult(index: job.index, outcome: .transportFailure("provider token: \(error)"), connection: connection)])
                    continue
                }
            }
            let started = uptimeNanoseconds()
            let result = w.session.perform(Self.call(job.request, url: url, jwt: jwt, settings: settings))
            let done = uptimeNanoseconds()
            let latency = Int((done - started) / 1_000_000)
            shared.connectionsOpened.add(w.session.lastConnects, ordering: .relaxed)
            var out: PushResult
            switch result {
            case .failure(.transport(_, let code, let message)):
                w.failureEvent += 1
                out = PushResult(index: job.index, outcome: .transportFailure("curl error \(code): \(message)"), latencyMs: latency,
                                 connection: connection, event: w.failureEvent)
                if StreamSlot.isConnectFailure(CURLcode(rawValue: UInt32(max(0, code)))) { w.reactions.connectFailed(now: done) }
                w.renew(now: done)
            case .success(let answer):
                let outcome = ResponseBody.outcome(status: answer.status, apnsId: answer.headers["apns-request-id"]) { answer.body }
                out = PushResult(index: job.index, outcome: outcome, latencyMs: latency, connection: connection)
                out.apnsUniqueId = answer.headers["apns-unique-id"]
                w.reactions.answered(outcome, jwt: jwt, onCurrent: true, now: done, shared: shared)
                if w.reactions.renewRequested { w.renew(now: done) }
            }
            shared.results.push([out])
        }
    }
}

extension BroadcastSender: PushSending {
    public func submit(_ jobs: [PushJob]) {
        guard !jobs.isEmpty else { return }
        shared.feed.withLock { $0.append(jobs) }
        for _ in 0..<min(jobs.count, connectionCount) { wake.signal() }
    }

    public func results(timeout: TimeInterval) -> [PushResult] { shared.results.take(timeout: timeout) }

    public func withdrawQueued() -> [Int] { shared.feed.withLock { $0.removeAll() }.map(\.index) }

    public func takeExpired() -> [Int] { shared.feed.withLock { $0.takeExpired() } }

    public func pause(until date: Date) {
        let seconds = max(0, date.timeIntervalSinceNow)
        shared.pausedUntil.store(uptimeNanoseconds() + UInt64(seconds * 1e9), ordering: .relaxed)
    }

    /// One request at a time per connection already.
    public func setStreamLimit(_ n: Int) {}

    public var counters: DeliveryCounters {
        var c = DeliveryCounters()
        c.connectionsOpened = shared.connectionsOpened.load(ordering: .relaxed)
        c.jwtsSigned = shared.token?.signedCount ?? 0
        return c
    }

    public func shutdown() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        for _ in 0..<connectionCount { wake.signal() }
        group.wait()
    }
}
