import Foundation
import HeraldCore
import HeraldPayload
import HeraldState
import Synchronization

/// `audience.prescan: false`: the audience is read on a thread of its own while the runner's
/// thread sends. Each ingest batch (smaller than the reading-first batches, so the sender's commits
/// never wait long behind one) makes its rows recipients in the transaction that stages them, with
/// duplicates and suppressed tokens decided there; the sender claims them as they commit.
///
/// What the prescan guaranteed is given up, and said so in the README: a truncated file, a broken
/// header or too many bad rows stop the run after some pushes went out (exit 2 or 5, with
/// everything sent recorded, and a rerun resumes), and progress shows input bytes, not a total.
final class ReadWhileSending: Sendable {
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
    private let suppression: SuppressionLookup?
    private let progress: RunProgress?

    init(rows: Int, invalid: Int, limit: InvalidRowLimit, suppression: SuppressionLookup?, progress: RunProgress?) {
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
        let hits = try suppression?.hits(for: batch.recipients) ?? [:]
        let recorded = try CampaignRunner.wrap(.usage) { () throws(StateError) in try state.ingestWhileSending(batch, suppressed: hits) }
        progress?.addSendWork(recorded.recipients - recorded.suppressed)
        let (rows, invalid) = tally.withLock { t in
            t.rows += batch.rows
            t.invalid += batch.invalid.count
            return (t.rows, t.invalid)
        }
        if limit.isExceededSoFar(invalid: invalid, rows: rows) {
            throw RunFailure(.tooManyInvalid, "\(invalid) of the first \(rows) audience rows are invalid, over audience.max_invalid_rows "
                             + "(\(limit), \(limit.allowed(rows: rows)) allowed so far): stopped while sending (audience.prescan: false); "
                             + "what was sent is recorded. invalid.csv lists the rows; fix the audience or raise the limit, then rerun")
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

/// The suppression list's entries for a batch of tokens, opened once for the run.
struct SuppressionLookup: Sendable {
    let shared: SharedStore
    let scope: SharedStore.SuppressionScope

    /// Tokens of the batch that must not be sent: on the list, and not re-registered after their 410.
    func hits(for recipients: [IngestBatch.Recipient]) throws(RunFailure) -> [String: SuppressionHit] {
        let listed = try CampaignRunner.wrap(.usage) { () throws(StateError) in
            try shared.suppressions(for: recipients.map(\.token.hex), scope: scope)
        }
        guard !listed.isEmpty else { return [:] }
        var out: [String: SuppressionHit] = [:]
        for r in recipients {
            guard let entry = listed[r.token.hex] else { continue }
            if let registered = r.registeredAt, registered > entry.invalidatedAt { continue }
            out[r.token.hex] = SuppressionHit(invalidatedAt: entry.invalidatedAt)
        }
        return out
    }
}

extension CampaignRunner {
    /// Reads the audience on its own thread while this one sends (see `ReadWhileSending`).
    /// Recipients recorded by an earlier invocation and not yet attempted go through the
    /// suppression list first, as the reading-first path does once before its first push.
    func sendWhileReading(state: RunState, run: RunInfo, renderer: RecipientRenderer, apnsIdSeed: String,
                          headers: HeaderRenderer, credentials: DeliveryTarget.Credentials) throws(RunFailure) -> SendResult {
        let topic = headers.shared.topic
        let adopted = try Self.wrap(.usage) { () throws(StateError) in try state.prepareSendWhileReading() }
        if adopted.recipients + adopted.duplicates > 0 {
            logger.info("\(adopted.recipients) recipient(s) and \(adopted.duplicates) duplicate(s) taken over from rows an earlier run read first")
        }
        try suppressUnattempted(state: state, topic: topic)
        let invalid = try Self.wrap(.usage) { () throws(StateError) in try state.invalidRowCount() }
        let reading = ReadWhileSending(rows: run.rows, invalid: invalid, limit: spec.audience.maxInvalidRows,
                                       suppression: try suppressionLookup(topic: topic), progress: operations.progress)
        logger.notice("sending while reading the audience (audience.prescan: false)")
        let reader = ReaderSide(runner: self)
        reading.start { () throws(RunFailure) in
            try reader.runner.ingest(into: state, run: run, renderer: renderer, apnsIdSeed: apnsIdSeed, whileSending: reading)
            try reader.runner.checkInvalidRows(state: state, whileSending: true)
            try Self.wrap(.usage) { () throws(StateError) in try state.markSuppressionChecked() }
        }
        let result: SendResult
        do throws(RunFailure) {
            result = try deliver(state: state, headers: headers, credentials: credentials, reading: reading)
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

    /// The suppression list, when herald-shared.sqlite exists and has entries for this scope.
    func suppressionLookup(topic: String) throws(RunFailure) -> SuppressionLookup? {
        try Self.wrap(.usage) { () throws(StateError) -> SuppressionLookup? in
            guard let shared = try openSharedStoreIfPresent() else { return nil }
            let scope = suppressionScope(topic)
            return try shared.suppressionCount(scope: scope) > 0 ? SuppressionLookup(shared: shared, scope: scope) : nil
        }
    }
}

/// The runner as the reader thread sees it: only its settings (`spec`, `logger`), the atomic stop
/// flag and the reading side of `operations` (file offsets and progress, which the sending side
/// never touches; progress is behind a lock). Hence unchecked.
private struct ReaderSide: @unchecked Sendable {
    let runner: CampaignRunner
}
