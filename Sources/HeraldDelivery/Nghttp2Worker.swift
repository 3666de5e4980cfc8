internal import CHTTP2Client
import Foundation
import HeraldCore

/// One connection's thread of the sender: an HTTP/2 connection on nghttp2 (CHTTP2Client) kept full
/// from the shared feed, reacting to answers (`ConnectionReactions`):
/// - An answer Apple pairs with "retry on a new connection" (503, Shutdown, ExpiredProviderToken…)
///   and a GOAWAY retire the connection: new requests go to a fresh one while the old one finishes
///   its streams. Streams a GOAWAY refused were never processed; they come back as transport
///   failures, resent by the runner with the same apns-id.
/// - A connect failure backs off exponentially before the next attempt.
/// - A request with no answer after `requestTimeoutMs` is reset (RST_STREAM CANCEL) and comes
///   back as a transport failure.
/// - A connection idle longer than `idleTimeoutMs` is closed.
/// - A connection the server has been silent on for `pingIntervalMs` gets an HTTP/2 PING; without
///   its ACK it is given up (Nghttp2Worker+Keepalive.swift).
final class Nghttp2Worker: @unchecked Sendable {
    // @unchecked: after `start`, every property is touched only by this worker's own thread.
    let id: Int
    let settings: ConnectionSettings
    let shared: EngineShared
    let wake: WakePipe
    private let endpoint: Nghttp2Endpoint
    private let destination: PushDestination

    /// A request in flight: what its answer is recorded against.
    private struct Pending {
        var job: PushJob
        var jwt: String?
        var startedAt: UInt64
        var streamId: Int32
        var connection: Connection
    }

    final class Connection {
        let handle: OpaquePointer
        var jwt: String?
        var jwtAdoptedAt: Date?
        var active = 0
        init(_ handle: OpaquePointer) { self.handle = handle }
        deinit { h2_close(handle) }
    }

    private var current: Connection?
    private var draining: [Connection] = []
    private var pending: [Pending?] = []
    private var free: [Int] = []
    private var fields = FieldBlock()
    private var headerJWT: String?
    private var generation = 0
    private var reactions = ConnectionReactions()
    private var lastActivity: UInt64 = uptimeNanoseconds()
    private var lastTimeoutScan: UInt64 = 0
    private var failureEvent = 0
    private var done: [PushResult] = []
    private var errorText = [CChar](repeating: 0, count: 512)

    init(id: Int, settings: ConnectionSettings, shared: EngineShared, endpoint: Nghttp2Endpoint, destination: PushDestination) throws(DeliveryError) {
        self.id = id
        self.settings = settings
        self.shared = shared
        self.endpoint = endpoint
        self.destination = destination
        self.wake = try WakePipe()
    }

    private var activeCount: Int { (current?.active ?? 0) + draining.reduce(0) { $0 + $1.active } }

    func run() {
        while true {
            let now = uptimeNanoseconds()
            let stopping = shared.stopped.load(ordering: .relaxed)
            if stopping && activeCount == 0 { break }
            if reactions.renewRequested { retireCurrent() }
            if let c = current, c.active == 0, now &- lastActivity > UInt64(settings.idleTimeoutMs) * 1_000_000 {
                current = nil   // closes the idle connection; the next request opens a new one
            }
            if !stopping, !shared.halted.load(ordering: .relaxed), now >= shared.pausedUntil.load(ordering: .relaxed), now >= reactions.reconnectAt {
                startRequests()
            }
            keepAlive(current, draining)
            turnAll()
            if now &- lastTimeoutScan > 100_000_000 {
                lastTimeoutScan = now
                cancelOverdue()
            }
            if !done.isEmpty {
                shared.results.push(done)
                done.removeAll(keepingCapacity: true)
            }
            waitForWork(now: now)
        }
        current = nil
        draining.removeAll()
    }

    // MARK: feeding

    /// Streams the current connection may still start: the job's and adaptive concurrency's
    /// limit, and the server's SETTINGS_MAX_CONCURRENT_STREAMS (nghttp2 assumes 100 until the
    /// server's SETTINGS arrive).
    private var room: Int {
        var limit = max(1, min(settings.maxStreams, shared.streamLimit.load(ordering: .relaxed)))
        if let c = current { limit = min(limit, Int(clamping: h2_remote_max_streams(c.handle))) }
        return limit - (current?.active ?? 0)
    }

    private func startRequests() {
        let before = self.room
        guard before > 0, shared.feed.withLock({ $0.count }) > 0 else { return }
        var jwt: String?
        if let token = shared.token {
            do { jwt = try token.current() } catch {
                fail(shared.feed.withLock { $0.take(before) }, TransportFailure(.neverSent, error.description))
                return
            }
        }
        // The connection before the jobs: `room` counts the server's SETTINGS_MAX_CONCURRENT_STREAMS
        // only once it is open. Jobs taken beyond it would wait inside nghttp2 for a stream, where
        // neither their `notAfter` nor a stop can reach them.
        let conn: Connection
        do { conn = try connection(for: jwt) } catch {
            fail(shared.feed.withLock { $0.take(before) }, error.failure)
            return
        }
        let room = self.room
        guard room > 0 else { return }
        let jobs = shared.feed.withLock { $0.take(room) }
        guard !jobs.isEmpty else { return }
        if jwt != headerJWT || generation == 0 {
            headerJWT = jwt
            generation += 1
        }
        // A new connection may have taken up to the connect timeout: each request's own timeout
        // starts when it is handed to nghttp2.
        let now = uptimeNanoseconds()
        for job in jobs {
            let r = job.request
            let key = FieldBlock.SharedKey(generation: generation, topic: r.topic, pushType: r.pushType, priority: r.priority,
                                           collapseId: r.collapseId, expiration: r.expiration)
            fields.prepare(r, for: destination, key: key, jwt: jwt)
            let slot = free.popLast() ?? { pending.append(nil); return pending.count - 1 }()
            let streamId = fields.bytes.withUnsafeBufferPointer { f in
                r.payload.withUnsafeBufferPointer { b in
                    h2_submit(conn.handle, f.baseAddress, f.count, b.baseAddress, b.count, UInt64(slot))
                }
            }
            guard streamId > 0 else {
                free.append(slot)
                fail([job], TransportFailure(.neverSent, "could not start the request: \(String(cString: h2_strerror(streamId)))"))
                continue
            }
            pending[slot] = Pending(job: job, jwt: jwt, startedAt: now, streamId: streamId, connection: conn)
            conn.active += 1
        }
        lastActivity = now
    }

    /// The connection new requests go to: a fresh one when the token changes sooner than Apple
    /// allows on one connection, or after a GOAWAY.
    private func connection(for jwt: String?) throws(ConnectFailed) -> Connection {
        if let c = current, ConnectionReactions.tokenNeedsFreshConnection(used: c.jwt, adoptedAt: c.jwtAdoptedAt, next: jwt) {
            retireCurrent()
        }
        if let c = current, h2_goaway(c.handle, nil, nil, nil) != 0 { retireCurrent() }
        let c: Connection
        if let existing = current {
            c = existing
        } else {
            c = try open()
            current = c
        }
        if c.jwt != jwt {
            c.jwt = jwt
            c.jwtAdoptedAt = Date()
        }
        return c
    }

    /// Why a connection could not be opened, as each request it held is answered (a trust failure
    /// stops the run: `AnswerMeaning.untrusted`).
    struct ConnectFailed: Error { let failure: TransportFailure }

    private func open() throws(ConnectFailed) -> Connection {
        switch endpoint.connect() {
        case .success(let handle):
            shared.connectionsOpened.add(1, ordering: .relaxed)
            return Connection(handle)
        case .failure(let failure):
            // One failed connect is one event for the circuit breaker, then a backoff.
            failureEvent += 1
            reactions.connectFailed(now: uptimeNanoseconds())
            throw ConnectFailed(failure: failure)
        }
    }

    private func fail(_ jobs: some Sequence<PushJob>, _ failure: TransportFailure) {
        for job in jobs {
            done.append(PushResult(index: job.index, outcome: .transportFailure(failure), latencyMs: 0, httpVersion: 0, connection: id,
                                   event: failureEvent))
        }
    }

    /// New requests go to a new connection; the old one finishes its streams, then closes.
    private func retireCurrent() {
        reactions.renewed(now: uptimeNanoseconds())
        guard let c = current else { return }
        current = nil
        if c.active > 0 { draining.append(c) }
    }

    // MARK: driving nghttp2

    private func turnAll() {
        if let c = current, turn(c) != 0 { current = nil }
        if !draining.isEmpty {
            for c in draining where turn(c) != 0 { c.active = 0 }
            draining.removeAll { $0.active == 0 }
        }
    }

    /// One turn of a connection; nonzero when it ended (its streams are all answered then).
    private func turn(_ c: Connection) -> Int32 {
        let state = h2_turn(c.handle, &errorText, errorText.count)
        var count = 0
        if let answers = h2_answers(c.handle, &count), count > 0 {
            let lostWhy = state < 0 ? Nghttp2Endpoint.text(errorText) : ""
            var eventCounted = false
            for i in 0..<count { complete(answers[i], on: c, lostWhy: lostWhy, eventCounted: &eventCounted) }
            h2_clear_answers(c.handle)
        }
        return state
    }

    private func complete(_ a: h2_answer, on c: Connection, lostWhy: String, eventCounted: inout Bool) {
        let slot = Int(a.cookie)
        guard slot < pending.count, let p = pending[slot] else { return }
        pending[slot] = nil
        free.append(slot)
        c.active -= 1
        let now = uptimeNanoseconds()
        lastActivity = now
        let outcome: PushOutcome
        if a.complete != 0 {
            outcome = Self.answered(a, sent: p.job.request.apnsId)
        } else {
            outcome = .transportFailure(Self.noAnswer(a, lostWhy: lostWhy, timeoutMs: settings.requestTimeoutMs))
            if !eventCounted {
                // One connection loss fails many streams at once: one event for the circuit breaker.
                failureEvent += 1
                eventCounted = true
            }
        }
        if case .answered = outcome {
            reactions.answered(outcome, topic: p.job.request.topic, jwt: p.jwt, onCurrent: c === current, now: now, shared: shared)
        }
        var result = PushResult(index: p.job.index, outcome: outcome, latencyMs: Int((now &- p.startedAt) / 1_000_000), httpVersion: 20,
                                connection: id, event: a.complete != 0 ? 0 : failureEvent)
        if a.unique_id_len > 0 { result.apnsUniqueId = Self.text(a.unique_id, Int(a.unique_id_len)) }
        done.append(result)
    }

    /// A complete answer as herald records it; `sent`: the request's apns-id, kept when echoed.
    static func answered(_ a: h2_answer, sent: String?) -> PushOutcome {
        var apnsId: String?
        if a.apns_id_len > 0 {
            let id = Self.text(a.apns_id, Int(a.apns_id_len))
            apnsId = id == sent ? sent : id
        }
        return ResponseBody.outcome(status: Int(a.status), apnsId: apnsId) {
            a.body.map { Array(UnsafeBufferPointer(start: $0, count: a.body_len)) } ?? []
        }
    }

    /// Why a request has no answer; each is resent with the same apns-id.
    static func noAnswer(_ a: h2_answer, lostWhy: String, timeoutMs: Int) -> TransportFailure {
        if a.cancelled != 0 { return TransportFailure(.timedOut, "no answer within the request timeout (\(timeoutMs) ms); the stream was reset") }
        if a.no_memory != 0 { return TransportFailure(.connectionLost, "out of memory: APNs answered, but the answer could not be kept") }
        if a.lost != 0 { return TransportFailure(.connectionLost, lostWhy.isEmpty ? "connection lost" : lostWhy) }
        if a.not_sent != 0 { return TransportFailure(.neverSent, "the request never left: its connection was going away (GOAWAY)") }
        switch a.reset_code {
        // RFC 9113 §8.7: REFUSED_STREAM means "the stream was not processed".
        case 7: return TransportFailure(.neverSent, "APNs refused the stream (REFUSED_STREAM) before processing it")
        case 0: return TransportFailure(.connectionLost, "the stream ended without an answer")
        default: return TransportFailure(.connectionLost, "APNs reset the stream (HTTP/2 error \(a.reset_code))")
        }
    }

    private static func text<T>(_ tuple: T, _ count: Int) -> String {
        withUnsafeBytes(of: tuple) { raw in String(decoding: raw.prefix(count), as: UTF8.self) }
    }

    /// Resets every request older than the request timeout; its answer comes back as `cancelled`.
    private func cancelOverdue() {
        let limit = UInt64(settings.requestTimeoutMs) * 1_000_000
        // Read now: a request started in this turn, after a connect, is younger than the turn.
        let now = uptimeNanoseconds()
        for case let p? in pending where now > p.startedAt && now - p.startedAt > limit {
            _ = h2_cancel(p.connection.handle, p.streamId)
        }
    }

    /// Sleeps until a connection or the feed has something to do, or the next timeout scan.
    private func waitForWork(now: UInt64) {
        let blocked = shared.halted.load(ordering: .relaxed) || shared.stopped.load(ordering: .relaxed)
        let feedWaiting = !blocked && shared.feed.withLock { $0.count } > 0
        var timeoutMs: Int32 = 100
        let resumeAt = max(shared.pausedUntil.load(ordering: .relaxed), reactions.reconnectAt)
        if feedWaiting && resumeAt > now {
            timeoutMs = min(timeoutMs, Int32(max(1, min(100, (resumeAt - now) / 1_000_000))))
        }
        if feedWaiting && resumeAt <= now {
            if current == nil { return }
            if room > 0 { timeoutMs = 0 }
        }
        var fds = [pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)]
        for c in [current].compactMap({ $0 }) + draining {
            let events = Int16(POLLIN) | (h2_wants_write(c.handle) != 0 ? Int16(POLLOUT) : 0)
            fds.append(pollfd(fd: h2_fd(c.handle), events: events, revents: 0))
        }
        _ = poll(&fds, nfds_t(fds.count), timeoutMs)
        if fds[0].revents != 0 { wake.drain() }
    }
}
