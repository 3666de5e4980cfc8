import Foundation
import HeraldCore
import HeraldOperations
import HeraldPayload
import HeraldState
import Synchronization

/// `audience.prescan: false`: the audience is read on a thread of its own while the runner's
/// thread sends. Each ingest batch (smaller than the reading-first batches, so the sender's commits
/// never wait long behind one) makes its rows recipients in the transaction that stages them, with
/// duplicates and suppressed tokens decided there; the sender claims them as they commit.
///
/// What the prescan guaranteed is given up, and said so in docs/how-a-run-works.md: a truncated file, a broken
/// header or too many bad rows stop the run after some pushes went out (exit 2 or 5, with
/// everything sent recorded, and a rerun resumes), and progress shows input bytes, not a total.
final class SendWhileReading: Sendable {
    static let batchRows = 1_024

    /// Rows (and invalid rows among them) recorded for the run so far, for `max_invalid_rows`.
    private struct Tally { var rows: Int; var invalid: Int }

    private let tally: Mutex<Tally>
    private let failure = Mutex<RunFailure?>(nil)
    private let finished = Atomic<Bool>(false)
    /// Set once sending has ended (finished, aborted, stopped): the reader stops at its next row.
    private let sendingEnded = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    private let limit: InvalidRowLimit
    private let suppression: SuppressionLists?
    /// `apns.environment_fallback`: where tokens were last accepted, applied to each batch first.
    private let environments: EnvironmentMemory?
    private let progress: RunProgress?

    init(rows: Int, invalid: Int, limit: InvalidRowLimit, suppression: SuppressionLists?, environments: EnvironmentMemory?, progress: RunProgress?) {
        self.environments = environments
        tally = Mutex(Tally(rows: rows, invalid: invalid))
        self.limit = limit
        self.suppression = suppression
        self.progress = progress
    }

    /// Whether rows may still arrive: the sender waits for them instead of finishing.
    var isReading: Bool { !finished.load(ordering: .acquiring) }
    /// The reader stopped on an error (audience, state file, too many invalid rows).
    var hasFailed: Bool { failure.withLock { $0 != nil } }
    var shouldStopReading: Bool { sendingEnded.load(ordering: .relaxed) }

    /// Records one batch: suppression verdicts first (herald-shared.sqlite), then one transaction.
    /// Throws exit 5 as soon as `max_invalid_rows` is passed (see `InvalidRowLimit.isExceededSoFar`).
    func record(_ batch: IngestBatch, state: RunState) throws(RunFailure) {
        let recorded = try CampaignRunner.wrap(.preparing) { () throws(StateError) in
            var batch = batch
            if let environments {
                let moves = try environments.moves(batch.recipients.map { (app: $0.app, token: $0.token.hex, environment: Int($0.environment)) })
                for m in moves { batch.recipients[m.index].environment = UInt8(m.environment.rawValue) }
            }
            let suppressed = try suppression?.verdict(batch.recipients.map {
                (key: SuppressedKey(app: $0.app, token: $0.token.hex), environment: Int($0.environment), registeredAt: $0.registeredAt)
            }).suppressed ?? [:]
            return try state.ingestWhileSending(batch, suppressed: suppressed)
        }
        progress?.addSendWork(recorded.recipients - recorded.suppressed)
        let (rows, invalid) = tally.withLock { t in
            t.rows += batch.rows
            t.invalid += batch.invalid.count
            return (t.rows, t.invalid)
        }
        if limit.isExceededSoFar(invalid: invalid, rows: rows) {
            throw CampaignRunner.tooManyInvalid(invalid, of: rows, limit: limit, readSoFar: true, whileSending: true)
        }
    }

    /// Runs `read` on a thread of its own; `read` ends with the audience fully recorded or throws.
    func start(_ read: @escaping @Sendable () throws(RunFailure) -> Void) {
        let thread = Thread { [self] in
            do throws(RunFailure) { try read() } catch {
                // Stopping because sending ended is not a failure of its own.
                if !shouldStopReading { failure.withLock { $0 = error } }
            }
            finished.store(true, ordering: .releasing)
            done.signal()
        }
        thread.name = "herald-audience"
        thread.start()
    }

    /// Sending is over: stops the reader and waits for it. Returns its failure, if any.
    func endSending() -> RunFailure? {
        sendingEnded.store(true, ordering: .relaxed)
        done.wait()
        done.signal()   // later calls return at once
        return failure.withLock { $0 }
    }
}

extension CampaignRunner {
    /// Reads the audience on its own thread while this one sends (see `SendWhileReading`).
    /// Recipients recorded by an earlier invocation and not yet attempted go through the
    /// suppression list first, as the reading-first path does once before its first push.
    func sendWhileReading(state: RunState, run: RunInfo, renderer: RecipientRenderer, apnsIdSeed: String,
                          headers: HeaderRenderer, routing: AppRouting, credentials: DeliveryTarget.Credentials) throws(RunFailure) -> SendResult {
        let adopted = try Self.wrap(.preparing) { () throws(StateError) in try state.prepareSendWhileReading() }
        if adopted.recipients + adopted.duplicates > 0 {
            logger.info("\(adopted.recipients) recipient(s) and \(adopted.duplicates) duplicate(s) taken over from rows an earlier run read first")
        }
        // Apple's 410s name dead device tokens; a broadcast's channels are never on that list.
        let suppression = spec.isBroadcast ? nil : try suppressionLists(routing: routing)
        if !spec.isBroadcast { try applyRememberedEnvironments(state: state, routing: routing) }
        try suppressUnattempted(state: state, lists: suppression)
        let invalid = try Self.wrap(.preparing) { () throws(StateError) in try state.invalidRowCount() }
        let reading = SendWhileReading(rows: run.rows, invalid: invalid, limit: spec.audience.maxInvalidRows,
                                       suppression: suppression, environments: try environmentMemory(routing: routing), progress: operations.progress)
        logger.notice("sending while reading the audience (audience.prescan: false)")
        let reader = ReaderSide(runner: self)
        reading.start { () throws(RunFailure) in
            try reader.runner.ingest(into: state, run: run, renderer: renderer, apnsIdSeed: apnsIdSeed, whileSending: reading)
            try reader.runner.checkInvalidRows(state: state, whileSending: true)
            try Self.wrap(.preparing) { () throws(StateError) in try state.markSuppressionChecked() }
        }
        let result: SendResult
        do throws(RunFailure) {
            result = try deliver(state: state, headers: headers, routing: routing, credentials: credentials, reading: reading)
        } catch {
            _ = reading.endSending()
            throw error
        }
        if let failure = reading.endSending() {
            var failed = result
            failed.status = failure.status
            failed.message = failure.message
            return failed
        }
        return result
    }
}

/// The runner as the reader thread sees it: only its settings (`spec`, `logger`), the atomic stop
/// flag and the reading side of `operations` (file offsets and progress, which the sending side
/// never touches; progress is behind a lock). Hence unchecked.
private struct ReaderSide: @unchecked Sendable {
    let runner: CampaignRunner
}
