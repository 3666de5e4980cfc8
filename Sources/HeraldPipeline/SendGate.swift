import Foundation
import HeraldCore
import HeraldState
import HeraldTestHooks
import Logging

/// The throttle between claiming recipients and sending them: `throttle.deadline`, `schedule`, the
/// per-device budgets across every campaign of the state directory (the silent-push budget,
/// `throttle.silent_per_device_per_hour` by `throttle.silent_over_budget`, and
/// `throttle.frequency_cap`: caps over one shared ledger), then `throttle.rate` and `throttle.silent_rate`.
///
/// Any send loop calls `admit` once per claimed batch, before building requests, and sends only
/// `Admission.send`; the recipients it holds back are already committed to the state file, so the
/// loop has nothing else to do for them. Order matters for crash safety: a push's ledger slots are
/// committed before `admit` returns it (a crash after that leaves an unused
/// slot, never an unrecorded push).
final class SendGate {
    /// What `admit` decided for one claimed batch.
    struct Admission {
        /// Send these now: the rate wait is done and background pushes are in the ledger.
        var send: [ClaimedRecipient] = []
        /// Over a budget with `skip`, or past their window: committed as `throttled`.
        var throttled: [Int64] = []
        /// Over a budget with `defer`, or held for their window: committed as waiting.
        var deferred: [Int64] = []
        /// Not sent in this run after all (deadline, or a stop while waiting for the rate): back to `pending`.
        var unclaimed: [Int64] = []
        /// For recipients of `send` whose window or quiet hours bound them: the instant their
        /// request must not start at or after (`PushJob.notAfter`), checked again as a connection takes it.
        var notAfter: [Int64: Date] = [:]
    }

    let throttle: ThrottleSpec
    let pushType: PushType
    let state: RunState
    let campaign: String
    /// `retry.max_attempts`: deferred recipients are parked at it so this run does not wait for them.
    let maxAttempts: Int
    let clock: ThrottleClock
    let isStopping: () -> Bool
    let logger: Logger
    /// A per-device budget the gate applies: a cap over the shared ledger.
    struct Budget {
        let cap: FrequencyCap
        /// The report reason of a recipient it holds back.
        let reason: String
        /// With `defer`: whether a held-back recipient waits for its slot as `scheduled`, claimed
        /// again when it comes (a frequency cap), or is parked until the next run checks it again
        /// (the silent-push budget: `RunState.deferSilent`).
        let waitsForSlot: Bool
    }
    /// In the order they are checked; a push held back by the first takes no slot in the second.
    let budgets: [Budget]
    /// The shared ledger; nil unless a budget applies.
    let ledger: SharedStore?
    /// The ledger's topic (the bundle id) of each app, by the state file's app number: caps and
    /// the silent-push budget count per device and app, as APNs delivers per topic.
    let topics: [String]
    /// Whether the job has a `schedule` (what a `scheduled` recipient waits for).
    let hasSchedule: Bool
    /// `schedule.wait`.
    let waitsForWindows: Bool
    /// `schedule`, checked again as each recipient leaves; nil without one.
    let localTime: LocalTimeCheck?
    /// Apple's hour; shorter only in tests (`HERALD_TEST_SILENT_WINDOW`).
    let silentWindow: TimeInterval
    /// UNIX seconds after which no send starts (`.infinity`: no deadline).
    let deadline: Double
    /// `push.broadcast`: the expiration header is required, and 0 is the one every channel takes.
    let broadcast: Bool
    private var overall: TokenBucket
    private var silent: TokenBucket
    private(set) var deadlineReached = false
    /// `throttleDeferrals`: background pushes held back by the budget this run (skipped or deferred).
    private(set) var counters = DeliveryCounters()

    /// Opens the ledger when the campaign sends background pushes, and makes recipients deferred
    /// by an earlier run due again so they are checked against it.
    /// `volume`: how the shared file beside the state file is opened (StateVolume).
    init(spec: JobSpec, state: RunState, volume: StateVolume = .local, maxAttempts: Int, clock: ThrottleClock = SystemThrottleClock(),
         silentWindow: TimeInterval? = nil, logger: Logger, isStopping: @escaping () -> Bool = { false }, topics: [String]? = nil) throws(RunFailure) {
        throttle = spec.throttle
        pushType = spec.push.type
        broadcast = spec.isBroadcast
        self.state = state
        self.maxAttempts = maxAttempts
        self.clock = clock
        self.isStopping = isStopping
        self.logger = logger
        self.silentWindow = silentWindow ?? Self.testSilentWindow ?? TimeInterval(FrequencyCap.silentBudgetWindow)
        let mono = clock.monotonic()
        overall = TokenBucket(rate: spec.throttle.rate, now: mono)
        silent = TokenBucket(rate: spec.push.type == .background ? spec.throttle.silentRate : 0, now: mono)
        deadline = spec.throttle.deadline?.instant(startedAt: clock.now().timeIntervalSince1970) ?? .infinity
        budgets = spec.deviceCaps(silentWindow: Int(self.silentWindow.rounded(.up))).map { cap in
            cap.isSilentBudget ? Budget(cap: cap, reason: RunState.silentBudgetReason, waitsForSlot: false)
                : Budget(cap: cap, reason: RunState.frequencyCapReason, waitsForSlot: true)
        }
        self.topics = topics ?? [spec.apns.topic]
        hasSchedule = spec.schedule != nil
        waitsForWindows = spec.schedule?.wait ?? true
        localTime = LocalTimeCheck(job: spec, runStarted: (try? state.reload().startDate) ?? clock.now())
        if !budgets.isEmpty {
            ledger = try CampaignRunner.wrap(.preparing) { () throws(StateError) in try SharedStore(besideStateFile: spec.statePath, volume: volume) }
            campaign = (try? state.reload().campaign) ?? spec.campaign
        } else {
            ledger = nil
            campaign = spec.campaign
        }
        if spec.push.type == .background {
            let deferred = try CampaignRunner.wrap(.sending) { () throws(StateError) in try state.recheckDeferred(now: clock.now()) }
            if deferred > 0 { logger.notice("\(deferred) recipient(s) deferred by the silent-push budget are checked against it again") }
            if self.silentWindow != TimeInterval(FrequencyCap.silentBudgetWindow) {
                logger.warning("HERALD_TEST_SILENT_WINDOW: silent-push budget window is \(self.silentWindow) s instead of an hour (test setting)")
            }
        }
    }

    /// The test-only window length, in seconds, from `HERALD_TEST_SILENT_WINDOW`, so an end-to-end
    /// test can see a deferred push go out "after its window" without waiting an hour.
    static let testSilentWindow: TimeInterval? = ProcessInfo.processInfo.environment["HERALD_TEST_SILENT_WINDOW"]
        .flatMap(Double.init).flatMap { $0 > 0 ? $0 : nil }

    /// How many recipients to claim at once: the in-flight window, cut to one second of sends when
    /// a rate applies, so a batch never waits long and the rate stays smooth.
    func batchSize(window: Int) -> Int {
        let rates = [overall, silent].filter { !$0.isUnlimited }.map(\.rate)
        guard let rate = rates.min() else { return window }
        return max(1, min(window, Int(rate)))
    }

    var deadlinePassed: Bool { deadlineReached || clock.now().timeIntervalSince1970 >= deadline }

    /// `apns-expiration` for a recipient: the job's (or the recipient's) when set, else the
    /// deadline, after which the notification is no longer worth delivering. A broadcast without
    /// one sends 0: Apple requires the header, and a channel without storage takes nothing else
    /// (https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
    func expiration(_ configured: ExpirationSpec, sentAt now: Int) -> Int? {
        if configured == .unset, broadcast { return 0 }
        if configured == .unset, deadline.isFinite { return Int(deadline.rounded(.down)) }
        return configured.headerValue(sentAt: now)
    }

    /// Decides a claimed batch (see `Admission`), commits the held-back recipients, waits for the
    /// rate, and returns what to send now.
    func admit(_ batch: [ClaimedRecipient]) throws(RunFailure) -> Admission {
        var a = Admission()
        guard !batch.isEmpty else { return a }
        var candidates = batch
        let now = clock.now()
        let mono = clock.monotonic()

        // Deadline: start only what the rate lets leave before it.
        if deadline.isFinite {
            let left = deadline - now.timeIntervalSince1970
            let fits = left <= 0 ? 0 : min(overall.affordable(now: mono, by: mono + left), silent.affordable(now: mono, by: mono + left))
            if fits < candidates.count {
                deadlineReached = true
                a.unclaimed = candidates[fits...].map(\.seq)
                candidates = Array(candidates[..<fits])
                try commit { () throws(StateError) in try state.release(a.unclaimed) }
            }
        }

        // The schedule, as each recipient leaves (see LocalTimeCheck), before the ledgers: a push
        // held for its window or the quiet hours takes no slot.
        if localTime != nil, !candidates.isEmpty {
            candidates = try checkSchedule(candidates, leaves: leaveTime(candidates.count, now: now, mono: mono), into: &a)
        }

        // The per-device budgets, before the rate: a push held back takes no rate token. Each push
        // takes its slots before it leaves, the whole batch in one transaction (so two campaigns
        // cannot both take a device's last slot), stamped with when the pushes will actually leave
        // (after the rate wait), never earlier.
        if let ledger, !candidates.isEmpty {
            let leaves = leaveTime(candidates.count, now: now, mono: mono)
            let decisions = try commit { () throws(StateError) in try admit(candidates, ledger: ledger, leaves: leaves) }
            CrashPoint.ledger.reached()
            var admitted: [ClaimedRecipient] = []
            var held: [String: [(seq: Int64, until: Date)]] = [:]
            for (c, decision) in zip(candidates, decisions) {
                if case .overCap(let category, let at) = decision { held[category, default: []].append((c.seq, at)) } else { admitted.append(c) }
            }
            for budget in budgets {
                guard let over = held[budget.cap.category] else { continue }
                counters.throttleDeferrals += over.count
                if budget.cap.overCap == .skip {
                    a.throttled += over.map(\.seq)
                    try commit { () throws(StateError) in try state.markThrottled(over.map(\.seq), reason: budget.reason) }
                } else if budget.waitsForSlot {
                    a.deferred += over.map(\.seq)
                    try commit { () throws(StateError) in try state.deferCapped(over) }
                } else {
                    a.deferred += over.map(\.seq)
                    try commit { () throws(StateError) in try state.deferSilent(over, runAttemptLimit: maxAttempts) }
                }
            }
            candidates = admitted
        }

        // The rate: wait (in short slices, so a signal is not kept waiting) until the batch may leave.
        if !candidates.isEmpty {
            var wait = max(overall.reserve(candidates.count, now: mono), silent.reserve(candidates.count, now: mono))
            while wait > 0 {
                if isStopping() {
                    a.unclaimed += candidates.map(\.seq)
                    let back = candidates.map(\.seq)
                    try commit { () throws(StateError) in try state.release(back) }
                    return a
                }
                let slice = min(wait, 0.2)
                clock.sleep(slice)
                wait -= slice
            }
        }
        a.send = candidates
        return a
    }

    /// When `count` pushes claimed at `now` leave: after the rate's wait.
    private func leaveTime(_ count: Int, now: Date, mono: Double) -> Date {
        now.addingTimeInterval(max(overall.wait(for: count, now: mono), silent.wait(for: count, now: mono)))
    }

    /// The schedule's part of `admit`: commits the recipients held for their window (or the quiet
    /// hours) and those whose window cannot open any more; returns the rest, with their `notAfter`.
    private func checkSchedule(_ candidates: [ClaimedRecipient], leaves: Date, into a: inout Admission) throws(RunFailure) -> [ClaimedRecipient] {
        guard let localTime else { return candidates }
        var admitted: [ClaimedRecipient] = []
        var held: [(seq: Int64, until: Date)] = []
        var missed: [Int64] = []
        for c in candidates {
            switch localTime.check(zone: c.timezone, attempts: c.attempts, leaves: leaves) {
            case .open:
                admitted.append(c)
                if let until = localTime.openUntil(zone: c.timezone, attempts: c.attempts) { a.notAfter[c.seq] = until }
            case .hold(let until): held.append((c.seq, until))
            case .missed: missed.append(c.seq)
            }
        }
        a.deferred += held.map(\.seq)
        a.throttled += missed
        if !held.isEmpty { try commit { () throws(StateError) in try state.holdForSchedule(held) } }
        if !missed.isEmpty { try commit { () throws(StateError) in try state.markThrottled(missed, reason: RunState.windowMissedReason) } }
        return admitted
    }

    /// Recipients a connection handed back unstarted because their window closed while they
    /// waited for a stream (`PushJob.notAfter`): checked against the schedule again now, as at
    /// admission (their ledger slots, taken then, are kept as for any resend). What may go now
    /// (a window that opened again) is returned to be sent.
    func readmitExpired(_ expired: [ClaimedRecipient]) throws(RunFailure) -> Admission {
        var a = Admission()
        a.send = try checkSchedule(expired, leaves: clock.now(), into: &a)
        return a
    }

    /// Why the run ends incomplete because of the throttle, if it does: said instead of the
    /// generic "still retryable" message.
    func stopMessage(open: Int) throws(RunFailure) -> String? {
        guard open > 0 else { return nil }
        let waiting = try commit { () throws(StateError) in try state.deferredSilent() }
        var parts: [String] = []
        if deadlinePassed {
            let when = Date(timeIntervalSince1970: deadline)
            parts.append("throttle.deadline (\(Self.iso(when))) reached: no new sends started after it")
        }
        if waiting.count > 0 {
            let when = waiting.earliest.map { " (the first at \(Self.iso($0)))" } ?? ""
            parts.append("\(waiting.count) background push(es) deferred by the silent-push budget "
                         + "(throttle.silent_per_device_per_hour \(throttle.silentPerDevicePerHour)) until their device's window opens\(when)")
        }
        let scheduled = try commit { () throws(StateError) in try state.scheduledCount() }
        if scheduled > 0, let due = try commit({ () throws(StateError) in try state.nextDueTime() }) {
            let how = deadlinePassed || !hasSchedule ? "" : " (schedule.wait: false)"
            // The last too: a cron line that stops before it leaves the campaign unfinished for good.
            let last = try commit { () throws(StateError) in try state.lastDueTime() }
            let until = last.map { $0 > due ? " (the last at \(Self.iso($0)))" : "" } ?? ""
            parts.append("\(scheduled) recipient(s) wait for \(waitingFor)\(how); the next are due at \(Self.iso(due))\(until): rerun then")
        }
        if localTime?.holdsRetries == true, !waitsForWindows {
            let held = try commit { () throws(StateError) in try state.heldRetries(maxAttempts: maxAttempts, after: clock.now()) }
            if held.count > 0, let first = held.earliest {
                parts.append("\(held.count) retried recipient(s) held by schedule.quiet_hours (schedule.wait: false); the first may go at \(Self.iso(first)): rerun then")
            }
        }
        guard !parts.isEmpty else { return nil }
        return parts.joined(separator: "; ") + "; \(open) recipient(s) not final yet, rerun to resume"
    }

    /// What a `scheduled` recipient waits for, in messages.
    var waitingFor: String {
        !budgets.contains(where: \.waitsForSlot) ? "their local window" : (hasSchedule ? "their local window or a frequency-cap slot" : "a frequency-cap slot")
    }

    static func iso(_ date: Date) -> String { UTCText.seconds(date) }

    private func commit<T>(_ body: () throws(StateError) -> T) throws(RunFailure) -> T {
        try CampaignRunner.wrap(.sending, body)
    }

    /// The ledger's decision for each candidate, in order: one `admit` (one transaction) per app.
    /// Apps never compete for a slot (each topic has its own counts per device), so two
    /// transactions keep the guarantee one gives.
    private func admit(_ candidates: [ClaimedRecipient], ledger: SharedStore, leaves: Date) throws(StateError) -> [LedgerDecision] {
        let caps = budgets.map(\.cap)
        let first = candidates[0].app
        if candidates.allSatisfy({ $0.app == first }) {
            return try ledger.admit(candidates.map { LedgerPush(token: $0.token.hex, apnsId: $0.apnsId) }, topic: topics[first],
                                    caps: caps, campaign: campaign, now: leaves)
        }
        var decisions = [LedgerDecision?](repeating: nil, count: candidates.count)
        for app in Set(candidates.map(\.app)).sorted() {
            let indexes = candidates.indices.filter { candidates[$0].app == app }
            let answered = try ledger.admit(indexes.map { LedgerPush(token: candidates[$0].token.hex, apnsId: candidates[$0].apnsId) },
                                            topic: topics[app], caps: caps, campaign: campaign, now: leaves)
            for (i, d) in zip(indexes, answered) { decisions[i] = d }
        }
        return decisions.map { $0! }
    }
}
