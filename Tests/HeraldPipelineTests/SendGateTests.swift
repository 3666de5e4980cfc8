import Foundation
import HeraldCore
@testable import HeraldPipeline
import HeraldState
import HeraldTestSupport
import Logging
import Testing

/// A clock the test moves: `sleep` advances it instead of sleeping.
final class FakeThrottleClock: ThrottleClock, @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private let lock = NSLock()
    private var t: Double
    private(set) var slept = 0.0
    init(_ start: Double = 1_800_000_000) { t = start }
    func monotonic() -> Double { lock.withLock { t } }
    func now() -> Date { lock.withLock { Date(timeIntervalSince1970: t) } }
    func sleep(_ seconds: Double) { lock.withLock { t += seconds; slept += seconds } }
    func advance(_ seconds: Double) { lock.withLock { t += seconds } }
}

/// SendGate on a fake clock with real state files and a real shared ledger.
@Suite struct SendGateTests {
    let dir = TemporaryDirectory("gate")
    let logger = Logger(label: "test")

    func spec(_ campaign: String, type: PushType = .background, throttle: ThrottleSpec) -> JobSpec {
        JobSpec(jobFile: "job.yaml", campaign: campaign, audience: AudienceSpec(files: []),
                apns: APNsSpec(endpoint: .simulator, topic: "com.example.app", auth: nil),
                push: PushSpec(type: type, priority: type.defaultPriority, template: .object([])),
                throttle: throttle, retry: RetrySpec(), statePath: dir.file("state/\(campaign).sqlite"), reports: ReportsSpec(dir: dir.file("r")))
    }

    /// A campaign's state with `tokens` recorded and ready to claim.
    func state(_ spec: JobSpec, tokens: ClosedRange<Int>) throws -> RunState {
        let store = try StateStore(path: spec.statePath)
        let run = try store.openRun(campaign: CampaignName(spec.campaign))
        var b = IngestBatch()
        b.recipients = tokens.map { i in
            IngestBatch.Recipient(token: DeviceToken(trustedCanonical: String(format: "%064x", i)), location: RowLocation(file: "a.csv", line: i + 1),
                                  recipientId: "", payload: Array(#"{"aps":{"content-available":1}}"#.utf8),
                                  apnsId: "\(spec.campaign)-\(i)")
        }
        b.rows = tokens.count
        try store.run(run).ingest(b)
        try store.run(run).markIngestComplete()
        return store.run(run)
    }

    func statuses(_ state: RunState) throws -> [String: Int] {
        var out: [String: Int] = [:]
        try state.forEachDelivery { out["\($0.status.reportStatus.rawValue)/\($0.reason)", default: 0] += 1 }
        return out
    }

    /// Admits a claimed batch and records the admitted ones as sent, as the send loop would.
    func sendAndRecord(_ gate: SendGate, _ state: RunState, _ limit: Int, _ clock: FakeThrottleClock) throws -> Int {
        let a = try gate.admit(state.claim(limit: limit, now: clock.now()))
        try state.record(a.send.map { AttemptOutcome(seq: $0.seq, status: .sent, httpStatus: 200) })
        return a.send.count
    }

    @Test func theDeadlineStartsOnlyWhatTheRateLetsLeaveBeforeItAndPutsTheRestBack() throws {
        let clock = FakeThrottleClock()
        let job = spec("deadline", type: .alert, throttle: ThrottleSpec(rate: 10, deadline: ThrottleDeadline(after: 2)))
        let state = try state(job, tokens: 1...50)
        let gate = try SendGate(spec: job, state: state, maxAttempts: 5, clock: clock, logger: logger)
        #expect(gate.batchSize(window: 500) == 10)
        #expect(try sendAndRecord(gate, state, 10, clock) == 10, "a full bucket: at once")
        #expect(clock.slept == 0)
        #expect(try sendAndRecord(gate, state, 10, clock) == 10)
        #expect(clock.slept == 1, "the second second's pushes waited for the rate")
        #expect(!gate.deadlinePassed)
        let last = try gate.admit(state.claim(limit: 30, now: clock.now()))
        try state.record(last.send.map { AttemptOutcome(seq: $0.seq, status: .sent, httpStatus: 200) })
        #expect(last.send.count == 10 && last.unclaimed.count == 20, "one second left before the deadline: 10 more")
        #expect(gate.deadlinePassed)
        try state.endClaims()   // as the send loop does when it stops
        #expect(try gate.admit(state.claim(limit: 5, now: clock.now())).unclaimed.count == 5, "nothing starts after the deadline")
        var untouched = 0
        try state.forEachDelivery { row in
            if row.status == .pending && row.attempts == 0 && row.firstAttemptAt == nil { untouched += 1 }
        }
        #expect(untouched == 20, "put back as never attempted (the last 5 were claimed and put back twice)")
        // apns-expiration: the deadline unless the job or recipient sets one.
        #expect(gate.expiration(.unset, sentAt: 0) == 1_800_000_002)
        #expect(gate.expiration(.relative(60), sentAt: 100) == 160)
        #expect(gate.expiration(.immediate, sentAt: 100) == 0)
        #expect(try gate.stopMessage(open: 40)?.contains("throttle.deadline") == true)
    }

    @Test func anAbsoluteDeadlineInThePastStartsNothing() throws {
        let clock = FakeThrottleClock()
        let job = spec("past", type: .alert, throttle: ThrottleSpec(deadline: ThrottleDeadline(at: 1_700_000_000, after: 3600)))
        let state = try state(job, tokens: 1...3)
        let gate = try SendGate(spec: job, state: state, maxAttempts: 5, clock: clock, logger: logger)
        #expect(gate.deadlinePassed)
        #expect(gate.expiration(.unset, sentAt: 0) == 1_700_000_000, "the earlier bound wins")
        #expect(try gate.admit(state.claim(limit: 3, now: clock.now())).unclaimed.count == 3)
        #expect(try statuses(state) == ["pending/": 3])
    }

    /// A broadcast requires apns-expiration, and 0 is the one value a channel without storage
    /// takes: without `push.expiration` a broadcast sends 0, whatever the deadline.
    @Test func aBroadcastWithoutAnExpirationSendsZero() throws {
        var job = spec("broadcast", type: .liveactivity, throttle: ThrottleSpec(deadline: ThrottleDeadline(at: 1_900_000_000)))
        job.push.broadcast = BroadcastSpec()
        let recipients = try state(job, tokens: 1...1)
        let gate = try SendGate(spec: job, state: recipients, maxAttempts: 5, clock: FakeThrottleClock(), logger: logger)
        #expect(gate.expiration(.unset, sentAt: 100) == 0)
        #expect(gate.expiration(.relative(60), sentAt: 100) == 160, "the job's own expiration still applies")
        job.push.broadcast = nil
        let device = try SendGate(spec: job, state: recipients, maxAttempts: 5, clock: FakeThrottleClock(), logger: logger)
        #expect(device.expiration(.unset, sentAt: 100) == 1_900_000_000)
    }

    @Test func theSilentBudgetHoldsAcrossCampaignsSharingAStateDirectory() throws {
        let clock = FakeThrottleClock()
        let t0 = clock.now()
        // Two campaigns send one background push each to tokens 1...3: two per device.
        for name in ["a1", "a2"] {
            let job = spec(name, throttle: ThrottleSpec())
            let s = try state(job, tokens: 1...3)
            let gate = try SendGate(spec: job, state: s, maxAttempts: 5, clock: clock, logger: logger)
            #expect(try gate.admit(s.claim(limit: 10, now: clock.now())).send.count == 3)
            clock.advance(60)
        }
        // A third, with skip (the default): throttled, final, reason silent_budget. Token 4 is fresh.
        let skipJob = spec("b", throttle: ThrottleSpec())
        let skip = try state(skipJob, tokens: 1...4)
        let skipGate = try SendGate(spec: skipJob, state: skip, maxAttempts: 5, clock: clock, logger: logger)
        let b = try skipGate.admit(skip.claim(limit: 10, now: clock.now()))
        #expect(b.send.map(\.token.hex) == [String(format: "%064x", 4)] && b.throttled.count == 3)
        #expect(try statuses(skip) == ["throttled/silent_budget": 3, "pending/": 1])
        #expect(skipGate.counters.throttleDeferrals == 3)
        #expect(try skipGate.stopMessage(open: 0) == nil)

        // A fourth, with defer: waits for the window that opens an hour after the first push.
        let deferJob = spec("c", throttle: ThrottleSpec(silentOverBudget: .defer))
        let later = try state(deferJob, tokens: 1...3)
        let gate = try SendGate(spec: deferJob, state: later, maxAttempts: 5, clock: clock, logger: logger)
        let c = try gate.admit(later.claim(limit: 10, now: clock.now()))
        #expect(c.send.isEmpty && c.deferred.count == 3)
        #expect(try statuses(later) == ["pending/silent_budget": 3], "reported as pending, with the reason")
        let waiting = try later.deferredSilent()
        #expect(waiting.count == 3 && waiting.earliest == t0.addingTimeInterval(3600))
        #expect(try later.claim(limit: 10, maxAttempts: 5, now: t0.addingTimeInterval(7200)).isEmpty,
                "not claimed again by this run, even once the window opens")
        #expect(try later.nextRetryTime(maxAttempts: 5) == nil, "and this run does not wait for it")
        #expect(try gate.stopMessage(open: 3)?.contains("3 background push(es) deferred") == true)

        // A later run before the window opens checks them again and defers them again, without
        // waiting for them; one after the window opens sends them.
        try later.resetRunAttempts()
        clock.advance(1000)
        let early = try SendGate(spec: deferJob, state: later, maxAttempts: 5, clock: clock, logger: logger)
        let again = try early.admit(later.claim(limit: 10, maxAttempts: 5, now: clock.now()))
        #expect(again.deferred.count == 3 && again.send.isEmpty)
        #expect(try later.nextRetryTime(maxAttempts: 5) == nil, "the run ends instead of waiting up to an hour")
        try later.resetRunAttempts()
        clock.advance(3600)
        let next = try SendGate(spec: deferJob, state: later, maxAttempts: 5, clock: clock, logger: logger)
        let sent = try next.admit(later.claim(limit: 10, maxAttempts: 5, now: clock.now()))
        #expect(sent.send.count == 3 && sent.send.allSatisfy { $0.attempts == 1 }, "the deferrals were not counted as attempts")
    }

    @Test func theSilentRateAppliesToBackgroundPushesAndTheLedgerIsStampedWhenThePushLeaves() throws {
        let clock = FakeThrottleClock()
        let job = spec("slow", throttle: ThrottleSpec(rate: 100, silentRate: 2))
        let s = try state(job, tokens: 1...6)
        let gate = try SendGate(spec: job, state: s, maxAttempts: 5, clock: clock, logger: logger)
        #expect(gate.batchSize(window: 500) == 2, "the lower of the two rates")
        let t0 = clock.now()
        #expect(try gate.admit(s.claim(limit: 6, now: clock.now())).send.count == 6)
        #expect(clock.slept == 2, "6 pushes at 2/s with 2 saved up")
        let ledger = try SharedStore(besideStateFile: job.statePath)
        // Stamped at t0 + 2 s: still inside the window an hour and a second after t0.
        #expect(try ledger.pushCount(.silentBudget(perDevice: 2, over: .skip), topic: job.apns.topic, token: String(format: "%064x", 1), now: t0.addingTimeInterval(3601)) == 1)
        #expect(try ledger.pushCount(.silentBudget(perDevice: 2, over: .skip), topic: job.apns.topic, token: String(format: "%064x", 1), now: t0.addingTimeInterval(3603)) == 0)
    }

    @Test func alertPushesNeitherReadNorWriteTheLedger() throws {
        let clock = FakeThrottleClock()
        let job = spec("alert", type: .alert, throttle: ThrottleSpec(silentRate: 1))
        let s = try state(job, tokens: 1...5)
        let gate = try SendGate(spec: job, state: s, maxAttempts: 5, clock: clock, logger: logger)
        #expect(gate.batchSize(window: 500) == 500, "silent_rate is for background pushes")
        #expect(try gate.admit(s.claim(limit: 500, now: clock.now())).send.count == 5)
        #expect(clock.slept == 0)
        #expect(!FileManager.default.fileExists(atPath: dir.file("state/herald-shared.sqlite")))
    }

    @Test func aStopWhileWaitingForTheRatePutsTheBatchBack() throws {
        let clock = FakeThrottleClock()
        let job = spec("stop", type: .alert, throttle: ThrottleSpec(rate: 1))
        let s = try state(job, tokens: 1...3)
        let gate = try SendGate(spec: job, state: s, maxAttempts: 5, clock: clock, logger: logger, isStopping: { clock.slept >= 0.5 })
        let a = try gate.admit(s.claim(limit: 3, now: clock.now()))
        #expect(a.send.isEmpty && a.unclaimed.count == 3)
        #expect(try statuses(s) == ["pending/": 3])
    }

    /// `schedule` is checked again as a claimed batch leaves: first pushes outside their window and
    /// retries inside the quiet hours are committed as waiting, and take no rate token.
    @Test func theScheduleHoldsFirstPushesOutsideTheWindowAndRetriesInTheQuietHours() throws {
        let clock = FakeThrottleClock()   // 2027-01-15T08:00:00Z
        var job = spec("local", type: .alert, throttle: ThrottleSpec())
        var schedule = ScheduleSpec()
        schedule.localTime = LocalSpan(from: LocalClockTime("09:00")!, to: LocalClockTime("10:00")!)
        schedule.quietHours = LocalSpan(from: LocalClockTime("21:00")!, to: LocalClockTime("08:30")!)
        job.schedule = schedule
        let s = try state(job, tokens: 1...4)
        let gate = try SendGate(spec: job, state: s, maxAttempts: 5, clock: clock, logger: logger)
        let early = try gate.admit(s.claim(limit: 4, now: clock.now()))
        #expect(early.send.isEmpty && early.deferred.count == 4, "08:00: the window opens at 09:00")
        #expect(try s.scheduledCount() == 4 && s.nextDueTime() == clock.now().addingTimeInterval(3600))
        #expect(try s.claim(limit: 4, now: clock.now()).isEmpty, "held, not claimable before then")

        clock.advance(3600)
        let open = try gate.admit(s.claim(limit: 4, now: clock.now()))
        #expect(open.send.count == 4 && open.deferred.isEmpty)
        try s.record(open.send.map { AttemptOutcome(seq: $0.seq, status: $0.seq == open.send[0].seq ? .retry : .sent, httpStatus: 200,
                                                    retryAt: clock.now()) })
        clock.advance(12.5 * 3600)   // 21:30, in the quiet hours
        let quiet = try gate.admit(s.claim(limit: 4, now: clock.now()))
        #expect(quiet.send.isEmpty && quiet.deferred.count == 1, "the retry waits for the quiet hours to end")
        #expect(try s.nextRetryTime(maxAttempts: 5) == clock.now().addingTimeInterval(11 * 3600), "08:30 the next day")
        #expect(try s.heldRetries(maxAttempts: 5, after: clock.now().addingTimeInterval(60)).count == 1)
        #expect(try s.scheduledCount() == 0, "a retry stays a retry")
    }
}
