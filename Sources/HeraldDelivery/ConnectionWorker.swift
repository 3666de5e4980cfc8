internal import CCurl
import Foundation
import HeraldCore

/// One connection's thread: a libcurl multi handle kept full from the shared feed. A finished
/// request is replaced at once by the next one, so every stream stays busy; results go to the
/// runner in one push per loop turn.
///
/// Connection management, within what libcurl 7.88 allows:
/// - GOAWAY and REFUSED_STREAM are handled inside libcurl (it moves to a new connection and
///   retries a refused stream itself; a refused stream was never processed, so no duplicate).
///   GOAWAY's debug data (Apple's `reason`) is not handed to applications by 7.88.
/// - An answer Apple pairs with "retry on a new connection" (503, Shutdown, IdleTimeout,
///   ExpiredProviderToken…) retires the connection: new requests go to a fresh multi handle
///   (FRESH_CONNECT in effect) while the old one finishes its streams and is closed.
/// - A connect failure backs off exponentially before the next attempt.
/// - A connection idle longer than `idleTimeoutMs` is closed (no HTTP/2 PING in 7.88's multi API).
final class ConnectionWorker: @unchecked Sendable {
    // @unchecked: after `start`, every property is touched only by this worker's own queue.
    let id: Int
    let settings: ConnectionSettings
    let shared: EngineShared
    let wake: WakePipe

    private var current: StreamConnection?
    private var draining: [StreamConnection] = []
    private var slots: [StreamSlot] = []
    private var free: [Int] = []
    private var headerJWT: String?
    private var generation = 0
    /// APNs header fields go to nghttp2 directly (`RequestFields`) until a request is answered
    /// without them; then, and where CCurlNghttp2 is not in effect, in libcurl's header list.
    private var fieldsToNghttp2: Bool
    /// This worker's test-only counts, handed to `shared.probe` when it stops.
    private var probe = SenderProbe()
    private var reactions = ConnectionReactions()
    private var lastActivity: UInt64 = uptimeNanoseconds()
    private var failureEvent = 0
    private var done: [PushResult] = []

    init(id: Int, settings: ConnectionSettings, shared: EngineShared) throws(DeliveryError) {
        self.id = id
        self.settings = settings
        self.shared = shared
        self.wake = try WakePipe()
        fieldsToNghttp2 = settings.requestFieldsToNghttp2 && RequestFields.inEffect
    }

    private var activeCount: Int { (current?.active ?? 0) + draining.reduce(0) { $0 + $1.active } }

    func run() {
        // Every libcurl call of this worker's connections runs on this thread, and a pooled
        // thread may have served another worker before: only this run's difference counts.
        let countsBefore = ShimCounts.onThisThread()
        defer {
            probe.shim = ShimCounts.onThisThread(since: countsBefore)
            shared.probe.withLock { $0.add(probe) }
        }
        while true {
            let now = uptimeNanoseconds()
            let stopping = shared.stopped.load(ordering: .relaxed)
            if stopping && activeCount == 0 { break }
            if reactions.renewRequested { retireCurrent() }
            if let c = current, c.active == 0, now &- lastActivity > UInt64(settings.idleTimeoutMs) * 1_000_000 {
                current = nil   // closes the idle connection; the next request opens a new one
            }
            if !stopping, !shared.halted.load(ordering: .relaxed), now >= shared.pausedUntil.load(ordering: .relaxed), now >= reactions.reconnectAt {
                startRequests(now: now)
            }
            performAll()
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

    private func startRequests(now: UInt64) {
        let limit = max(1, min(settings.maxStreams, shared.streamLimit.load(ordering: .relaxed)))
        let room = limit - (current?.active ?? 0)
        guard room > 0 else { return }
        let jobs = shared.feed.withLock { $0.take(room) }
        guard !jobs.isEmpty else { return }
        var jwt: String?
        if let token = shared.token {
            do { jwt = try token.current() } catch {
                fail(jobs, why: error.description)
                return
            }
        }
        let conn: StreamConnection
        do { conn = try connection(for: jwt) } catch {
            fail(jobs, why: error.description)
            return
        }
        if jwt != headerJWT || generation == 0 {
            headerJWT = jwt
            generation += 1
        }
        for job in jobs {
            do {
                let slot = try takeSlot()
                try slot.prepare(job, baseURL: settings.baseURL, jwt: jwt, generation: generation, fieldsToNghttp2: fieldsToNghttp2)
                slot.jwt = jwt
                slot.connection = conn
                slot.startedAt = now
                try curlCheck(curl_multi_add_handle(conn.multi.handle, slot.easy.handle), "add request")
                conn.active += 1
            } catch {
                fail([job], why: error.description)
            }
        }
        lastActivity = now
    }

    /// The connection new requests go to; a fresh one when the token changes sooner than Apple
    /// allows on one connection.
    private func connection(for jwt: String?) throws(DeliveryError) -> StreamConnection {
        if let c = current, ConnectionReactions.tokenNeedsFreshConnection(used: c.jwt, adoptedAt: c.jwtAdoptedAt, next: jwt) {
            retireCurrent()
        }
        let c: StreamConnection
        if let existing = current {
            c = existing
        } else {
            c = try StreamConnection(maxStreams: settings.maxStreams)
            current = c
        }
        if c.jwt != jwt {
            c.jwt = jwt
            c.jwtAdoptedAt = Date()
        }
        return c
    }

    private func takeSlot() throws(DeliveryError) -> StreamSlot {
        if let i = free.popLast() { return slots[i] }
        let s = try StreamSlot(slot: slots.count, settings: settings)
        slots.append(s)
        return s
    }

    private func fail(_ jobs: some Sequence<PushJob>, why: String) {
        for job in jobs {
            done.append(PushResult(index: job.index, outcome: .transportFailure(why), latencyMs: 0, httpVersion: 0, connection: id, event: 0))
        }
    }

    /// New requests go to a new connection; the old one finishes its streams, then closes.
    private func retireCurrent() {
        reactions.renewed(now: uptimeNanoseconds())
        guard let c = current else { return }
        current = nil
        if c.active > 0 { draining.append(c) }
    }

    // MARK: driving libcurl

    private func performAll() {
        if let c = current { perform(c) }
        if !draining.isEmpty {
            for c in draining { perform(c) }
            draining.removeAll { $0.active == 0 }
        }
    }

    private func perform(_ c: StreamConnection) {
        var running: Int32 = 0
        if c.socket >= 0 { probe.corkedTurns += 1 }
        TCPCork.set(c.socket, true)
        _ = curl_multi_perform(c.multi.handle, &running)
        TCPCork.set(c.socket, false)
        var left: Int32 = 0
        var eventCounted = false
        var connectFailed: String?
        while let msg = curl_multi_info_read(c.multi.handle, &left) {
            guard msg.pointee.msg == CURLMSG_DONE, let h = msg.pointee.easy_handle else { continue }
            let code = msg.pointee.data.result
            var priv: UnsafeMutableRawPointer?
            _ = herald_easy_getinfo_ptr(h, CURLINFO_PRIVATE, &priv)
            let slot = slots[Int(bitPattern: priv) - 1]
            // The request that opened a connection under this multi handle (the first one, or
            // libcurl's reconnect after a GOAWAY) names its socket.
            let opened = slot.easy.takeOpenedSocket()
            if opened >= 0 {
                c.socket = opened
                probe.socketsLearnt += 1
            }
            _ = curl_multi_remove_handle(c.multi.handle, h)
            c.active -= 1
            if StreamSlot.isConnectFailure(code), connectFailed == nil, case .transportFailure(let why) = slot.outcome(code: code) {
                connectFailed = why
            }
            complete(slot, code: code, eventCounted: &eventCounted)
        }
        if let why = connectFailed, c.active > 0 {
            // The requests waiting for this connection (PIPEWAIT) would each retry the connect on
            // their own, one failure after another: fail them together, as one event, and let the
            // reconnect backoff decide when to try again. None of them left the process.
            for slot in slots where slot.connection === c && slot.job != nil {
                _ = curl_multi_remove_handle(c.multi.handle, slot.easy.handle)
                c.active -= 1
                if let job = slot.job {
                    done.append(PushResult(index: job.index, outcome: .transportFailure(why), latencyMs: 0, httpVersion: 0,
                                           connection: id, event: failureEvent))
                }
                _ = slot.easy.takeOpenedSocket()   // a socket of the failed connect, closed by now
                slot.job = nil; slot.connection = nil; slot.jwt = nil
                free.append(slot.slot)
            }
        }
    }

    private func complete(_ slot: StreamSlot, code: CURLcode, eventCounted: inout Bool) {
        let now = uptimeNanoseconds()
        lastActivity = now
        var outcome = slot.outcome(code: code)
        if slot.sentWithFields, case .answered = outcome {
            if slot.fieldsMissed {
                // Answered, but sent without apns-topic, apns-id, authorization…: its answer says
                // nothing about this notification. Resend it (same apns-id) with libcurl's list.
                outcome = .transportFailure("the request left without its APNs headers (libcurl did not hand them to nghttp2); resent with libcurl's header list")
                fieldsToNghttp2 = false
                probe.requestFieldsMissed += 1
            } else {
                probe.requestFieldsAttached += 1
            }
        }
        shared.connectionsOpened.add(slot.connectsMade, ordering: .relaxed)
        let newEvent = code != CURLE_OK && !eventCounted
        if newEvent {
            // One connection loss fails many streams at once: one event for the circuit breaker.
            failureEvent += 1
            eventCounted = true
        }
        switch outcome {
        case .transportFailure:
            if StreamSlot.isConnectFailure(code), newEvent {
                reactions.connectFailed(now: now)
                if slot.connection === current { retireCurrent() }
            }
        case .answered:
            reactions.answered(outcome, jwt: slot.jwt, onCurrent: slot.connection === current, now: now, shared: shared)
        }
        let latency = Int((now &- slot.startedAt) / 1_000_000)
        if let job = slot.job {
            var result = PushResult(index: job.index, outcome: outcome, latencyMs: latency, httpVersion: slot.easy.httpVersion,
                                    connection: id, event: code == CURLE_OK ? 0 : failureEvent)
            result.apnsUniqueId = slot.apnsUniqueId
            done.append(result)
        }
        slot.job = nil
        slot.connection = nil
        slot.jwt = nil
        free.append(slot.slot)
    }

    /// Sleeps until the network or the feed has something: `curl_multi_poll` on the current
    /// connection plus the wake pipe; short polls while an old connection drains beside it.
    private func waitForWork(now: UInt64) {
        let blocked = shared.halted.load(ordering: .relaxed) || shared.stopped.load(ordering: .relaxed)
        let feedWaiting = !blocked && shared.feed.withLock { $0.count } > 0
        var timeoutMs: Int32 = 100
        if draining.count > 0 { timeoutMs = 2 }
        let resumeAt = max(shared.pausedUntil.load(ordering: .relaxed), reactions.reconnectAt)
        if feedWaiting && resumeAt > now {
            timeoutMs = min(timeoutMs, Int32(max(1, min(100, (resumeAt - now) / 1_000_000))))
        }
        var wfd = curl_waitfd(fd: wake.readFD, events: Int16(CURL_WAIT_POLLIN), revents: 0)
        if let c = current ?? draining.first {
            if feedWaiting && resumeAt <= now && (current?.active ?? 0) < max(1, shared.streamLimit.load(ordering: .relaxed)) {
                timeoutMs = 0
            }
            var n: Int32 = 0
            _ = curl_multi_poll(c.multi.handle, &wfd, 1, timeoutMs, &n)
            if wfd.revents != 0 { wake.drain() }
        } else {
            if feedWaiting && resumeAt <= now { return }
            var p = pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, timeoutMs)
            if p.revents != 0 { wake.drain() }
        }
    }
}
