import Dispatch
import Foundation
import HeraldCore
import HeraldDelivery
import HeraldOperations
import HeraldPayload
import HeraldReports
import HeraldState
import Logging
import Synchronization

/// What a finished `herald run` tells its caller.
public struct RunReport: Sendable {
    public var status: ExitStatus
    public var message: String?
    public var summary: Summary?
    public var reportsDir: String
    public var statePath: String
    /// The send stage's counters (connections opened, JWTs signed, retries).
    public var counters = DeliveryCounters()
    /// Recipients this invocation sent (the summary's figures are the campaign's, over every invocation).
    public var sentNow = 0
}

/// Runs one campaign: ingest the audience into the state file, send every pending recipient,
/// write the reports. Each stage commits to SQLite before the next acts on it, so the same command
/// run again after any crash resumes where this one stopped.
public final class CampaignRunner {
    let spec: JobSpec
    let logger: Logger
    /// `--new-run`: start a new run even though the last one finished.
    let newRun: Bool
    /// Set by SIGINT/SIGTERM: stop claiming, finish the batch in flight, record it, exit 4.
    let stopRequested = Atomic<Bool>(false)
    var signalSources: [DispatchSourceSignal] = []
    /// This invocation's sending-stage counters: the send stage adds to them, and the run row keeps
    /// their sum over invocations (`RunState.addCounters`) for summary.json.
    var deliveryCounters = DeliveryCounters()
    /// `--shard`, progress and metrics (RunOperations.swift); the default changes nothing.
    public var operations = RunOperations()
    /// How the state directory's SQLite files are opened, decided before the campaign's lock is taken.
    var stateVolume = StateVolume.local

    public init(spec: JobSpec, logger: Logger, newRun: Bool = false) {
        self.spec = spec
        self.logger = logger
        self.newRun = newRun
    }

    public func requestStop() { stopRequested.store(true, ordering: .relaxed) }

    /// Installs SIGINT/SIGTERM handlers that ask for a graceful stop; a second signal exits at once
    /// (still resumable: the state file is always consistent).
    public func installSignalHandlers() {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in
                guard let self else { return }
                if self.stopRequested.load(ordering: .relaxed) { _exit(ExitStatus.incomplete.rawValue) }
                self.logger.notice("stopping after the requests in flight (signal again to exit now)")
                self.operations.stopping()
                self.requestStop()
            }
            source.resume()
            signalSources.append(source)
        }
    }

    public func run() -> RunReport {
        let started = Date()
        var report = RunReport(status: .finished, message: nil, summary: nil, reportsDir: spec.reports.dir, statePath: spec.statePath)
        let lock: CampaignLock
        do {
            stateVolume = try StateVolume(job: spec)
            lock = try CampaignLock(statePath: spec.statePath)
        } catch {
            let failure = RunFailure(error, during: .preparing)
            report.status = failure.status; report.message = failure.message
            return report
        }
        defer { withExtendedLifetime(lock) {} }
        operations.locked()

        let store: StateStore
        let payloads: PayloadRenderer
        let run: RunInfo
        let credentials: DeliveryTarget.Credentials
        let events: EventShipper?
        /// A cancellation found before this invocation: the run records it and sends nothing.
        var cancelledBefore: CampaignControl?
        do throws(RunFailure) {
            payloads = try Self.wrap(.preparing) { () throws(PayloadTemplateError) in try PayloadRenderer(push: spec.push, section: spec.templateSection) }
            _ = try Self.wrap(.preparing) { () throws(PayloadTemplateError) in try HeaderRenderer(job: spec) }
            if let experiment = spec.experiment {
                _ = try Self.wrap(.preparing) { () throws(PayloadTemplateError) in
                    try ExperimentRenderers(job: spec, experiment: experiment, campaign: CampaignName(spec.campaign).resolved(at: started))
                }
            }
            // Before the credentials: a paused campaign's cron run, or `herald cancel` recording a
            // cancellation from an operator's shell, needs no key and connects nowhere.
            // A campaign that never ran has no state file and no hold; the file is not created for
            // a job whose credentials turn out unusable.
            let open = { [spec, stateVolume] () throws(RunFailure) -> StateStore in
                try Self.wrap(.preparing) { () throws(StateError) in try StateStore(path: spec.statePath, volume: stateVolume) }
            }
            let existing = FileManager.default.fileExists(atPath: spec.statePath) ? try open() : nil
            switch try Self.wrap(.preparing, { () throws(StateError) in try existing?.control() }) {
            case let hold? where hold.action == .paused: throw pausedBeforeStart(hold)
            case let hold?: cancelledBefore = hold
            case nil: break
            }
            credentials = cancelledBefore == nil ? try DeliveryTarget.loadCredentials(spec, forPushes: true) : .init()
            if let existing { store = existing } else { store = try open() }
            events = try Self.wrap(.preparing) { () throws(EventsError) -> EventShipper? in
                guard let e = spec.events else { return nil }
                return try EventShipper(spec: e, store: store, shard: operations.shard?.description,
                                        environment: ProcessInfo.processInfo.environment, logger: logger)
            }
            if cancelledBefore == nil, let problem = spec.schedule?.pastDateProblem(at: started),
               try Self.wrap(.preparing, { () throws(StateError) in
                   try store.runToResume(campaign: CampaignName(spec.campaign), newRun: newRun, now: started) == nil }) {
                // Only a new run: one already under way finishes its recipients as window_missed.
                throw RunFailure(.usage, "\(spec.jobFile): \(problem)")
            }
            run = try Self.wrap(.preparing) { () throws(StateError) in
                // A cancelled campaign never starts a new run.
                try store.openRun(campaign: CampaignName(spec.campaign), newRun: newRun && cancelledBefore == nil, now: started, broadcast: spec.isBroadcast)
            }
            if run.disposition == .resumed && run.broadcast != spec.isBroadcast {
                // A channel id would go out as a device token's path, or a token as apns-channel-id.
                let was = run.broadcast ? "a broadcast to channels" : "device pushes", now = spec.isBroadcast ? "a broadcast" : "device pushes"
                throw RunFailure(.usage, "\(spec.jobFile): the unfinished run \(run.runId) of campaign \(run.campaign) sends \(was), and this job "
                                 + "now sends \(now): restore the job to finish that run, or give the new one its own state file (state:)")
            }
            // Before anything is recorded: every outcome from here on has its event.
            try Self.wrap(.preparing) { () throws(StateError) in try events?.start() }
        } catch {
            report.status = error.status; report.message = error.message
            return report
        }
        let state = store.run(run)
        let reportsDir = CampaignName.resolvePath(spec.reports.dir, campaign: run.campaign, startedAt: run.startDate)
        report.reportsDir = reportsDir
        let writer = ReportWriter(directory: reportsDir, compress: spec.reports.compress)

        if run.disposition == .finished {
            var done = finishedAlready(run, state: state, writer: writer, report: report, events: events?.finish())
            if let hold = cancelledBefore, done.status == .finished { done.status = .stopped; done.message = cancelledAlready(hold) }
            return done
        }
        switch run.disposition {
        case .new: logger.notice("starting run \(run.runId) of campaign \(run.campaign)")
        default:
            logger.notice("resuming run \(run.runId) of campaign \(run.campaign), started \(run.startedAt)")
            if newRun { logger.warning("--new-run: the last run (\(run.runId)) is unfinished and is resumed first; a new run starts once it has finished") }
        }

        var outcome: (ExitStatus, String?) = (.finished, nil)
        /// An experiment's test is over and recipients wait for its winner: the run stays open for it.
        var awaiting: String?
        // A hold committed while this run goes on stops it as a signal would, within a second.
        let watch = ControlWatch(store: store) { [self] hold in
            logger.notice("campaign \(hold.description): stopping after the requests in flight")
            operations.stopping()
            requestStop()
        }
        do throws(RunFailure) {
            let headers = try Self.wrap(.preparing) { () throws(PayloadTemplateError) in
                try HeaderRenderer(push: spec.push, topic: spec.apns.topic, campaign: run.campaign)
            }
            let firstOfItsName = try Self.wrap(.preparing) { () throws(StateError) in try store.isFirstRun(named: run.campaign, id: run.id) }
            let routing = try registerApps(state: state, run: run)
            var renderer = RecipientRenderer(payload: payloads, headers: headers, localeField: spec.audience.localeField,
                                             registeredAtField: spec.audience.registeredAtField,
                                             dueTimes: spec.schedule.map { _ in DueTimes(job: spec, now: started, runStarted: run.startDate) })
            if spec.isRouted { renderer.routing = routing }
            renderer.defaultRoute = .init(app: routing.numbers[0], environment: spec.apns.defaultEnvironment)
            if let experiment = spec.experiment {
                renderer.experiment = try Self.wrap(.preparing) { () throws(PayloadTemplateError) in
                    try ExperimentRenderers(job: spec, experiment: experiment, campaign: run.campaign)
                }
            }
            let apnsIdSeed = firstOfItsName ? run.campaign : run.campaign + "/" + run.runId
            let audience = try prepareAudience(state: state, run: run)
            if let hold = cancelledBefore {
                let settled = try settle(hold, state: state, renderer: renderer, apnsIdSeed: apnsIdSeed)
                throw settled
            }
            let result: SendResult
            let listedChannels = !(spec.push.broadcast?.channels.isEmpty ?? true)
            if !audience.ingestComplete && !spec.audience.prescan && audience.audiencePass == 1 && !listedChannels {
                try releaseWinner(state: state)
                result = try sendWhileReading(state: state, run: audience, renderer: renderer, apnsIdSeed: apnsIdSeed,
                                              headers: headers, routing: routing, credentials: credentials)
            } else {
                if !audience.ingestComplete && listedChannels {
                    try ingestListedChannels(into: state, run: audience, renderer: renderer, apnsIdSeed: apnsIdSeed)
                } else if !audience.ingestComplete {
                    if !spec.audience.prescan {
                        logger.notice("audience.prescan: false applies to a run's first reading; the changed audience is read whole before sending")
                    }
                    try ingest(into: state, run: audience, renderer: renderer, apnsIdSeed: apnsIdSeed)
                }
                try checkInvalidRows(state: state)
                try releaseWinner(state: state)
                // Apple's 410s name dead device tokens; a channel is never on that list.
                if !spec.isBroadcast {
                    try applyRememberedEnvironments(state: state, routing: routing)
                    try applySuppressionList(state: state, routing: routing)
                }
                result = try deliver(state: state, headers: headers, routing: routing, credentials: credentials)
            }
            deliveryCounters.connectionsOpened += result.counters.connectionsOpened
            deliveryCounters.jwtsSigned += result.counters.jwtsSigned
            deliveryCounters.retries += result.counters.retries
            deliveryCounters.throttleDeferrals += result.counters.throttleDeferrals
            report.sentNow = result.sent
            outcome = (result.status, result.message)
            if outcome.0 == .finished, let waiting = try awaitingWinner(state: state) {
                awaiting = waiting
                outcome.1 = waiting
            }
            if result.status == .incomplete, let hold = watch.finish() {
                let settled = try settle(hold, state: state, renderer: renderer, apnsIdSeed: apnsIdSeed)
                outcome = (settled.status, settled.message)
            }
        } catch {
            outcome = (error.status, error.message)
        }
        let hold = cancelledBefore ?? watch.finish()

        // Reports are written from the state file whatever happened after the run was opened.
        // A cancelled run is over: every recipient is final (`cancelled` for the rest).
        let cancelled = outcome.0 == .stopped && hold?.action == .cancelled
        if (outcome.0 == .finished && awaiting == nil) || (cancelled && (try? state.openCount()) == 0) {
            do {
                try state.finish()
            } catch {
                outcome = (.incomplete, RunFailure(error, during: .sending).message)
            }
        }
        recordInvalidatedTokens(state: state, run: run)
        rememberFallbackEnvironments(state: state, run: run)
        // After a signal, one try for what is left: the operator (or Kubernetes) wants the process gone.
        let eventFigures = events?.finish(attempts: stopRequested.load(ordering: .relaxed) ? 1 : 3)
        let extras = SummaryExtras(exitCode: Int(outcome.0.rawValue), events: eventFigures)
        do {
            // The run row keeps time and counters over invocations, so a regenerated summary shows them too.
            try state.addCounters(deliveryCounters, seconds: Date().timeIntervalSince(started), exitCode: Int(outcome.0.rawValue))
            // Read back once: counts and finished_at as committed, not as this process remembers them.
            let current = try state.reload()
            report.summary = try writer.write(state: state, campaign: current.campaign, run: current, finishedAt: current.finishedAt, extra: extras)
        } catch {
            let failure = RunFailure(error, during: .reporting)
            let message = "reports not written: \(failure.message)"
            outcome = (outcome.0 == .finished ? failure.status : outcome.0, [outcome.1, message].compactMap { $0 }.joined(separator: "; "))
        }
        report.status = outcome.0
        report.message = outcome.1
        report.counters = deliveryCounters
        return report
    }

    /// `audience.max_invalid_rows`: checked once the whole audience is recorded, before the first
    /// push (the ingest is the prescan: the audience is read once, completely, before sending), or,
    /// sending while reading (`whileSending`), once the reader has recorded the last row.
    /// Audience row errors and per-recipient render errors count together.
    func checkInvalidRows(state: RunState, whileSending: Bool = false) throws(RunFailure) {
        let (rows, invalid) = try Self.wrap(.preparing) { () throws(StateError) in (try state.reload().rows, try state.invalidRowCount()) }
        let limit = spec.audience.maxInvalidRows
        if limit.isExceeded(invalid: invalid, rows: rows) {
            throw Self.tooManyInvalid(invalid, of: rows, limit: limit, readSoFar: false, whileSending: whileSending)
        }
    }

    /// Exit 5's message. `readSoFar`: judged on the rows read so far (sending while reading).
    static func tooManyInvalid(_ invalid: Int, of rows: Int, limit: InvalidRowLimit, readSoFar: Bool, whileSending: Bool) -> RunFailure {
        let counted = readSoFar ? "of the first \(rows)" : "of \(rows)"
        let allowed = "\(limit.allowed(rows: rows)) allowed \(readSoFar ? "so far" : "here")"
        let sent = whileSending ? "stopped while sending (audience.prescan: false); what was sent is recorded" : "nothing sent"
        return RunFailure(.tooManyInvalid, "\(invalid) \(counted) audience rows are invalid, over audience.max_invalid_rows (\(limit), \(allowed)): "
                          + "\(sent). invalid.csv lists them; fix the audience or raise the limit, then rerun")
    }

    /// A finished campaign run again sends nothing; its reports are rewritten only if one is
    /// missing or was left partial by a crash while they were written.
    func finishedAlready(_ run: RunInfo, state: RunState, writer: ReportWriter, report: RunReport, events: [EventSinkSummary]?) -> RunReport {
        var report = report
        let finishedAt = run.finishedAt ?? ""
        var what = "campaign \(run.campaign) already finished (run \(run.runId) at \(finishedAt)): nothing sent"
        recordInvalidatedTokens(state: state, run: run)
        rememberFallbackEnvironments(state: state, run: run)
        do {
            if writer.isComplete(runId: run.runId, finishedAt: finishedAt) {
                report.summary = try writer.summary(state: state, run: run, extra: SummaryExtras(exitCode: 0, events: events))
                what += "; reports are complete"
            } else {
                report.summary = try writer.write(state: state, campaign: run.campaign, run: run, finishedAt: run.finishedAt,
                                                  extra: SummaryExtras(exitCode: 0, events: events))
                what += "; missing or partial reports regenerated"
            }
            if CampaignName(spec.campaign).isPeriodic {
                what += "; the next period's campaign starts when its name (\(spec.campaign)) changes, or with --new-run"
            } else {
                what += "; use --new-run to send it again"
            }
            report.message = what
        } catch {
            let failure = RunFailure(error, during: .reporting)
            report.status = failure.status
            report.message = "\(what); reports not written: \(failure.message)"
        }
        return report
    }

    /// Runs a throwing step of `stage`; its typed error becomes the RunFailure that
    /// `RunFailure(_:during:)`, the one mapping of failures to exit codes, makes of it.
    static func wrap<T, E: Error>(_ stage: RunStage, _ body: () throws(E) -> T) throws(RunFailure) -> T {
        do { return try body() } catch { throw RunFailure(error, during: stage) }
    }
}
