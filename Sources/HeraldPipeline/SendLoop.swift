import Foundation
import HeraldCore
import HeraldDelivery
import HeraldPayload
import HeraldState
import HeraldTestHooks
import Logging

/// The runner's side of the streaming sender, on the runner's thread, the only one that touches
/// the state file. Each turn it commits, in ONE transaction (one fsync with `synchronous=FULL`),
/// the answers that arrived during the previous commit and claims as many recipients as there is
/// room for (the claim committed before they are handed to the sender); then it takes the next
/// answers. Commits are therefore as frequent as the disk allows and as large as the traffic
/// makes them, while the connections keep every stream busy from the queue in front of them.
///
/// At most `connections × streams_per_connection` plus twice a claim (half the window, at most
/// 1,000) recipients are claimed and not yet recorded (the window on the wire, a claim waiting for
/// a stream, a claim's worth being recorded): memory does not grow with the audience, and after a `kill -9` only they have an unknown outcome (resent with their apns-id).
///
/// It also applies the policies that need the whole picture: the circuit breaker, adaptive
/// concurrency, the environment guard, `retry.max_elapsed`, and aborting (stop feeding, drain
/// what is in flight, record it, put the affected recipients back to pending).
final class SendLoop {
    private struct Outstanding { var claimed: ClaimedRecipient; var claimedAt: Date }

    let spec: JobSpec
    let state: RunState
    /// Each recipient's app's headers and pool.
    let routes: SendRoutes
    let sender: any PushSending
    /// Deadline, silent-push budget and rates (`throttle.*`), between claiming and sending.
    let gate: SendGate
    let logger: Logger
    let stopRequested: () -> Bool
    /// The audience is still being read (`audience.prescan: false`): nothing claimable is no reason to finish.
    let moreComing: () -> Bool
    /// Told of every batch of answers once it is committed (progress and metrics).
    let onRecorded: ([AttemptOutcome]) -> Void
    let maxAttempts: Int
    let cap: Int
    let claimChunk: Int

    private var outstanding: [Int64: Outstanding] = [:]
    /// BadDeviceToken/DeviceTokenNotForTopic answers held back until their route's environment
    /// guard decides, by route (`SendRoutes.route`).
    private var held: [[AttemptOutcome]]
    private var toRecord: [AttemptOutcome] = []
    private var toRelease: [Int64] = []
    private var toExhaust: [Int64] = []
    /// First attempt in this run of recipients being retried (for `retry.max_elapsed`).
    private var firstTry: [Int64: Date] = [:]
    /// By pool: server errors at one endpoint or credential do not pause the others. (Arrays,
    /// not dictionaries: they are read on every answer.)
    private var breakers: [CircuitBreaker]
    private var adaptive: [AdaptiveConcurrency]
    /// By route (app and environment): a wrong-environment storm in one app stops that app only.
    private var guards: [EnvironmentGuard]
    /// By pool and connection (`pool << 16 | connection`).
    private var lastFailureEvent: [Int: Int] = [:]
    /// The first abort-class answer (what a one-app campaign's message says).
    private var abort: OutcomeDecision.Abort?
    /// Apps (by number) no longer sent, with why: an answer about their credentials or topic, or
    /// their environment guard. Their recipients stay pending; when every app is stopped, the run is.
    private var stopped: [Int: String] = [:]
    /// A TLS trust failure: nothing can be sent until the configuration is fixed.
    private var trustFailure: String?
    private var released = 0
    private var sent = 0
    private var retries = 0
    private var withdrawn = false
    private var nextClaimAt = Date.distantPast
    /// The due time last logged as waited for (`schedule.wait: true`), so each wait is said once.
    private var announcedWait: Date?
    /// Set once a claim was made after `moreComing` turned false (sending while reading).
    private var lookedAfterReading = false
    private var lastCommit = Date.distantPast
    /// The longest an answer waits for its commit when traffic is thin.
    static let maxRecordDelay: TimeInterval = 0.02

    init(spec: JobSpec, state: RunState, routes: SendRoutes, sender: any PushSending, gate: SendGate, logger: Logger,
         stopRequested: @escaping () -> Bool, moreComing: @escaping () -> Bool = { false },
         onRecorded: @escaping ([AttemptOutcome]) -> Void = { _ in }) {
        self.spec = spec; self.state = state; self.routes = routes; self.sender = sender; self.gate = gate; self.logger = logger
        self.stopRequested = stopRequested; self.moreComing = moreComing; self.onRecorded = onRecorded
        maxAttempts = spec.retry.maxAttempts
        let window = sender.window
        // Half a window per commit, up to 1,000: the queue still holds a claim's worth when the
        // next claim is due, so no stream waits, and each commit (an fsync, and one status-index
        // pass over the batch) is spread over as many pushes as it can be without a stream
        // waiting for its claim (docs/benchmarks.md#window has the rates and peak RSS by window).
        // Past 1,000 a larger batch saves little per push, while every recipient claimed ahead is
        // memory held (its payload, ids and bookkeeping): at 8 × 1,000 streams, 6,000 fewer of them.
        claimChunk = max(1, min(window / 2, 1_000))
        cap = window + 2 * claimChunk
        breakers = (0..<sender.poolCount).map { _ in CircuitBreaker() }
        adaptive = (0..<sender.poolCount).map { AdaptiveConcurrency(maximum: sender.streams(pool: $0)) }
        guards = (0..<routes.routeCount).map { _ in EnvironmentGuard(broadcast: spec.isBroadcast) }
        held = Array(repeating: [], count: routes.routeCount)
    }

    private var halting: Bool { stopped.count >= routes.apps.count || trustFailure != nil || gate.deadlinePassed || stopRequested() }
    private var tripped: EnvironmentGuard? { guards.first { $0.verdict == .tripped } }

    func run() throws(RunFailure) -> CampaignRunner.SendResult {
        try CampaignRunner.wrap(.preparing) { () throws(StateError) in
            try state.resetRunAttempts()
            try state.recoverInflight()
        }
        while true {
            if halting && !withdrawn {
                // Stop feeding: what no connection has started never left; it goes back to pending.
                withdrawn = true
                for index in sender.withdrawQueued() where outstanding.removeValue(forKey: Int64(index)) != nil {
                    toRelease.append(Int64(index))
                }
            }
            // Requests a connection did not start because their window had closed while they
            // waited for a stream never left: the gate holds them for their next window.
            let expired = sender.takeExpired().compactMap { outstanding.removeValue(forKey: Int64($0))?.claimed }
            if !expired.isEmpty {
                let again = try gate.readmitExpired(expired)
                if !again.send.isEmpty { submit(again.send, notAfter: again.notAfter) }
            }
            var claimed = try commitAndClaim()
            if !stopped.isEmpty && !claimed.isEmpty {
                // A stopped app's recipients are claimed with the others and put straight back
                // (below the claim mark: not claimed again in this run).
                let (keep, back) = (claimed.filter { stopped[$0.app] == nil }, claimed.filter { stopped[$0.app] != nil })
                toRelease += back.map(\.seq)
                claimed = keep
            }
            if !claimed.isEmpty {
                // Held-back recipients (deadline, silent-push budget) are committed by the gate.
                let admission = try gate.admit(claimed)
                if !admission.send.isEmpty { submit(admission.send, notAfter: admission.notAfter) }
            }
            if outstanding.isEmpty && toRecord.isEmpty && toRelease.isEmpty && toExhaust.isEmpty {
                if halting { break }
                if claimed.isEmpty, try !waitForRetries() { break }
                continue
            }
            let pending = !toRecord.isEmpty || !toRelease.isEmpty || !toExhaust.isEmpty
            let results = sender.results(timeout: pending ? max(0.001, Self.maxRecordDelay + lastCommit.timeIntervalSinceNow) : 0.05)
            for r in results { handle(r) }
        }
        // Everything claimed is recorded or put back: nothing is in flight any more.
        try CampaignRunner.wrap(.sending) { () throws(StateError) in try state.endClaims() }
        return finish()
    }

    // MARK: commits

    private func commitAndClaim() throws(RunFailure) -> [ClaimedRecipient] {
        let now = Date()
        var room = halting ? 0 : cap - outstanding.count
        room = min(room, gate.batchSize(window: cap))
        let wantClaim = room > 0 && (room >= claimChunk || outstanding.isEmpty) && now >= nextClaimAt
        let waiting = toRecord.count + toRelease.count + toExhaust.count
        // Each commit is an fsync: answers wait for a worthwhile batch, a claim, or a short delay.
        let wantRecord = waiting > 0 && (waiting >= claimChunk || outstanding.isEmpty || halting
                                         || now.timeIntervalSince(lastCommit) >= Self.maxRecordDelay)
        guard wantClaim || wantRecord else { return [] }
        lastCommit = now
        let (outcomes, release, exhaust) = (toRecord, toRelease, toExhaust)
        let claimed = try CampaignRunner.wrap(.sending) { () throws(StateError) in
            try state.commit(outcomes, release: release, exhaust: exhaust, maxAttempts: maxAttempts, claim: wantClaim ? room : 0, now: now)
        }
        if !outcomes.isEmpty {
            onRecorded(outcomes)
            CrashPoint.send.reached()
        }
        released += release.count
        toRecord.removeAll(keepingCapacity: true)
        toRelease.removeAll(keepingCapacity: true)
        toExhaust.removeAll(keepingCapacity: true)
        // Nothing claimable now: look again shortly (answers recorded meanwhile may make retries due).
        if wantClaim && claimed.isEmpty { nextClaimAt = now.addingTimeInterval(0.1) }
        return claimed
    }

    private func submit(_ claimed: [ClaimedRecipient], notAfter: [Int64: Date]) {
        let now = Date()
        let sentAt = Int(now.timeIntervalSince1970)
        var jobs: [PushJob] = []
        jobs.reserveCapacity(claimed.count)
        // One app's headers for the whole batch unless its recipients' apps change.
        guard let first = claimed.first else { return }
        var app = -1
        var shared = routes.headers(app: first.app)
        for c in claimed {
            outstanding[c.seq] = Outstanding(claimed: c, claimedAt: now)
            let own = c.headers
            if c.app != app {
                if app >= 0 { shared = routes.headers(app: c.app) }
                app = c.app
            }
            let request = PushRequest(token: c.token, payload: c.payload, apnsId: c.apnsId, topic: shared.topic, pushType: shared.pushType,
                                      priority: own?.priority ?? shared.priority, collapseId: own.map { $0.collapseId } ?? shared.collapseId,
                                      expiration: gate.expiration(own?.expiration ?? shared.expiration, sentAt: sentAt))
            jobs.append(PushJob(index: Int(c.seq), request: request, notAfter: notAfter[c.seq],
                                pool: routes.pool(app: c.app, environment: c.environment)))
        }
        sender.submit(jobs)
    }

    /// Nothing in flight and nothing claimable: waits for the earliest retry (false: none left
    /// for this run, or the guard has just decided to stop).
    private func waitForRetries() throws(RunFailure) -> Bool {
        if moreComing() {
            // The reader commits its next batch soon: look again then.
            Thread.sleep(forTimeInterval: 0.01)
            nextClaimAt = .distantPast
            return true
        }
        if !lookedAfterReading {
            // The reader may have committed its last batch after this turn's claim: one more look.
            lookedAfterReading = true
            nextClaimAt = .distantPast
            return true
        }
        if let route = guards.indices.first(where: { guards[$0].verdict == .undecided && guards[$0].answered > 0 }) {
            settleGuard(route, guards[route].finish())
            return true
        }
        var next = try CampaignRunner.wrap(.sending) { () throws(StateError) in try state.nextRetryTime(maxAttempts: maxAttempts) }
        if spec.schedule?.wait == true,
           let due = try CampaignRunner.wrap(.sending, { () throws(StateError) in try state.nextDueTime() }) {
            // `schedule.wait: true`: stay up (lock held) until the next local window opens.
            if next.map({ due < $0 }) ?? true, due > Date().addingTimeInterval(1), announcedWait != due {
                announcedWait = due
                let waiting = (try? state.scheduledCount()) ?? 0
                logger.notice("\(waiting) recipient(s) wait for \(gate.waitingFor); the next are due at \(SendGate.iso(due)) (schedule.wait: true)")
            }
            next = min(next ?? due, due)
        }
        guard let next else { return false }
        if gate.localTime?.holdsRetries == true, spec.schedule?.wait == true, next.timeIntervalSinceNow > 60, announcedWait != next,
           let held = try? state.heldRetries(maxAttempts: maxAttempts, after: Date()), held.count > 0, held.earliest == next {
            announcedWait = next
            logger.notice("\(held.count) retried recipient(s) held by schedule.quiet_hours; the first may go at \(SendGate.iso(next)) (schedule.wait: true)")
        }
        // `schedule.wait: false`: a retry held by quiet hours waits for a later run, not in this one.
        if spec.schedule?.wait == false && next.timeIntervalSinceNow > 60 { return false }
        let wait = min(next.timeIntervalSinceNow, 0.25)
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
        nextClaimAt = .distantPast
        return true
    }

    // MARK: answers

    private func handle(_ r: PushResult) {
        let seq = Int64(r.index)
        guard let o = outstanding.removeValue(forKey: seq) else { return }
        let now = Date()
        let route = SendRoutes.route(app: o.claimed.app, environment: o.claimed.environment)
        observe(r, route: route, app: o.claimed.app, fellBack: o.claimed.fellBack)
        if r.outcome.meaning == .untrusted, case .transportFailure(let why) = r.outcome {
            // Never reached APNs: back to pending, uncounted, and the run stops.
            if trustFailure == nil { logger.error("TLS: \(why)") }
            trustFailure = trustFailure ?? why.detail
            toRelease.append(seq)
            return
        }
        switch OutcomeDecision.decide(r.outcome, for: o.claimed, now: now, fallback: spec.apns.environmentFallback).annotated(with: r) {
        case .sent(let outcome):
            sent += 1
            firstTry.removeValue(forKey: seq)
            toRecord.append(outcome)
        case .failed(let outcome, let reason):
            firstTry.removeValue(forKey: seq)
            if guards[route].holds(reason) {
                switch guards[route].verdict {
                case .undecided where stopped[o.claimed.app] != nil: toRelease.append(seq)
                case .undecided: held[route].append(outcome)
                case .tripped: toRelease.append(seq)
                case .passed: toRecord.append(outcome)
                }
            } else {
                toRecord.append(outcome)
            }
        case .retry(var outcome, let delay):
            retries += 1
            // `schedule.quiet_hours` hold retries too; the hold does not count against retry.max_elapsed.
            if let check = gate.localTime, let at = outcome.retryAt { outcome.retryAt = check.holdRetry(at, zone: o.claimed.timezone) }
            let first = firstTry[seq] ?? o.claimedAt
            if now.addingTimeInterval(delay).timeIntervalSince(first) > Double(spec.retry.maxElapsed) {
                firstTry.removeValue(forKey: seq)
                toExhaust.append(seq)
            } else {
                firstTry[seq] = first
            }
            toRecord.append(outcome)
        case .abort(let a):
            firstTry.removeValue(forKey: seq)
            toRelease.append(seq)
            if abort == nil { abort = a }
            // An answer about the credentials stops every app of the pool; one about the topic, its app.
            let apps = r.outcome.abortScope == .topic ? [o.claimed.app] : routes.apps(inPool: r.pool)
            for app in apps where stopped[app] == nil {
                stop(app, "APNs answered \(a.status) \(a.reason) (\(a.meaning))")
            }
        }
    }

    /// Feeds the pool's circuit breaker and adaptive concurrency, and the route's environment guard.
    private func observe(_ r: PushResult, route: Int, app: Int, fellBack: Bool) {
        var sample = true
        if case .transportFailure = r.outcome {
            // The streams one connection loss failed together are one event.
            let connection = r.pool << 16 | r.connection
            sample = lastFailureEvent[connection] != r.event
            lastFailureEvent[connection] = r.event
        }
        let pools = sender.poolCount > 1
        if sample, let until = breakers[r.pool].record(failure: AnswerMeaning.isServerFailure(r.outcome), now: Date()) {
            logger.warning("most recent answers are server errors or lost connections: pausing \(pools ? routes.poolName(r.pool) : "all sending") until \(until) (circuit breaker)")
            sender.pause(pool: r.pool, until: until)
        }
        if sample, let limit = adaptive[r.pool].record(pushback: AnswerMeaning.isPushback(r.outcome)) {
            logger.info("streams per connection\(pools ? " of " + routes.poolName(r.pool) : "") now \(limit) (adaptive concurrency)")
            sender.setStreamLimit(pool: r.pool, limit)
        }
        guard case .answered(let status, _, let reason, _) = r.outcome, guards[route].verdict == .undecided,
              stopped.isEmpty || stopped[app] == nil else { return }
        // A token moved to the other environment (`environment_fallback`) is the fallback at work, not a mix-up.
        let counted = OutcomeDecision.fallsBack(reason, status: status, fellBack: fellBack, fallback: spec.apns.environmentFallback) ? nil : reason
        settleGuard(route, guards[route].record(status: status, reason: counted))
    }

    private func settleGuard(_ route: Int, _ verdict: EnvironmentGuard.Verdict) {
        guard verdict != .undecided else { return }
        let waiting = held[route]
        held[route] = []
        switch verdict {
        case .undecided: return
        case .passed: toRecord += waiting
        case .tripped:
            toRelease += waiting.map(\.seq)
            let (app, _) = SendRoutes.appAndEnvironment(route: route)
            if stopped[app] == nil { stop(app, guards[route].message + routes.environmentNote(route: route)) }
        }
    }

    /// Sends nothing more for `app`: its recipients not started go back to pending, those held for
    /// its environment guards too, and with other apps still going the campaign goes on without it.
    private func stop(_ app: Int, _ why: String) {
        stopped[app] = why
        guard routes.apps.count > 1 else {
            logger.error("\(why): stopping the campaign after the requests in flight")
            return
        }
        logger.error("app \(routes.names[app]): \(why): its recipients stay pending; the other apps go on")
        for index in sender.withdrawQueued(where: { outstanding[Int64($0.index)]?.claimed.app == app })
        where outstanding.removeValue(forKey: Int64(index)) != nil {
            toRelease.append(Int64(index))
        }
        for route in SendRoutes.routes(app: app) where route < held.count {
            toRelease += held[route].map(\.seq)
            held[route] = []
        }
    }

    private func finish() -> CampaignRunner.SendResult {
        var counters = sender.counters
        counters.retries = retries
        counters.throttleDeferrals = gate.counters.throttleDeferrals
        if routes.apps.count > 1, trustFailure == nil, !stopped.isEmpty {
            let apps = stopped.keys.sorted().map { "app \(routes.names[$0]): \(stopped[$0]!)" }
            let others = routes.apps.count - stopped.count
            return .init(status: .aborted, message: "aborted for \(apps.joined(separator: "; ")); their recipients stay pending "
                         + "(\(released) put back). \(others > 0 ? "The \(others) other app(s) went on: \(sent) sent in this run. " : "")"
                         + "Fix the configuration and rerun: only the pending recipients are sent.", sent: sent, counters: counters)
        }
        if let a = abort {
            return .init(status: .aborted, message: "aborted: APNs answered \(a.status) \(a.reason) (\(a.meaning)); "
                         + "\(released) recipient(s) put back to pending. Fix the configuration and rerun.", sent: sent, counters: counters)
        }
        if let why = trustFailure {
            return .init(status: .incomplete, message: "the TLS connection to APNs was refused: \(why). "
                         + "Check apns.ca_file (it replaces the system trust store) or the system's CA certificates, then rerun "
                         + "(\(sent) sent in this run; the others stay pending)", sent: sent, counters: counters)
        }
        if let guardian = tripped {
            return .init(status: .aborted, message: "aborted: \(guardian.message); \(released) recipient(s) put back to pending. "
                         + "Fix the configuration and rerun.", sent: sent, counters: counters)
        }
        return .init(status: .finished, message: nil, sent: sent, counters: counters)
    }
}
