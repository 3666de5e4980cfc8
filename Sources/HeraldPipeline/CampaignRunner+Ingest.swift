import Foundation
import HeraldAudience
import HeraldCore
import HeraldPayload
import HeraldState
import HeraldTestHooks

extension CampaignRunner {
    static let ingestBatchRows = 8_192

    /// Compares the audience files with what the run recorded when it first read them. A resumed
    /// run continues from its checkpoint if the files are unchanged, and reads them again as a new
    /// pass if they changed (identity is the token: a token already sent is never sent again; new
    /// recipients are added, vanished undecided ones are not sent). Returns the run as it now is.
    func prepareAudience(state: RunState, run: RunInfo) throws(RunFailure) -> RunInfo {
        var current = try AudienceFingerprinter.fingerprints(of: spec.audience.files)
        if let listed = AudienceFingerprinter.listedChannels(of: spec) { current.append(listed) }
        let recorded = try Self.wrap(.preparing) { () throws(StateError) in try state.audienceFiles() }
        if recorded.isEmpty {
            try Self.wrap(.preparing) { () throws(StateError) in try state.recordAudienceFiles(current) }
            return run
        }
        let changes = AudienceFingerprinter.differences(old: recorded, new: current)
        guard !changes.isEmpty else { return run }
        logger.warning("the audience changed since run \(run.runId) first read it: \(changes.joined(separator: "; ")). Reading it again: tokens already sent are not sent again, new ones are added, vanished ones still pending are not sent")
        try Self.wrap(.preparing) { () throws(StateError) in try state.startNewAudiencePass(current) }
        return try Self.wrap(.preparing) { () throws(StateError) in try state.reload() }
    }

    /// Reads every audience file once, renders each recipient's payload and records recipients and
    /// invalid rows in the state file, batch by batch with the checkpoint in the same transaction.
    /// Nothing is sent until the whole audience is read, so a truncated file or a broken header
    /// stops the run before the first push. A resumed ingest skips rows at or before the checkpoint.
    ///
    /// `whileSending`: the runner's thread sends meanwhile (`audience.prescan: false`); batches are
    /// smaller and each makes its rows recipients at once (`SendWhileReading`).
    func ingest(into state: RunState, run: RunInfo, renderer: RecipientRenderer, apnsIdSeed: String,
                whileSending: SendWhileReading? = nil) throws(RunFailure) {
        let batchRows = whileSending == nil ? Self.ingestBatchRows : SendWhileReading.batchRows
        var batch = IngestBatch()
        var total = 0
        let pass = run.audiencePass
        let apnsIds = APNsIdGenerator(seed: apnsIdSeed)
        operations.startReading(spec.audience.files, first: run.ingestedFile)
        var audience = spec.audience
        audience.templateColumns = renderer.fieldsEveryRowNeeds
        for (index, file) in audience.files.enumerated() where index >= run.ingestedFile {
            let reader = try Self.wrap(.preparing) { () throws(AudienceError) in try AudienceFileReader(file: file, spec: audience) }
            while true {
                if stopRequested.load(ordering: .relaxed) || whileSending?.shouldStopReading == true {
                    try flush(&batch, state: state, pass: pass, whileSending: whileSending)
                    throw RunFailure(.incomplete, "stopped by signal while reading the audience; rerun to resume")
                }
                guard let event = try Self.wrap(.preparing, { () throws(AudienceError) in try reader.next() }) else { break }
                let line: Int
                switch event {
                case .record(let r): line = r.location.line
                case .invalid(let r): line = r.location.line
                }
                if index == run.ingestedFile && line <= run.ingestedLine { continue }
                accept(event, into: &batch, renderer: renderer, apnsIds: apnsIds)
                batch.checkpointFile = index
                batch.checkpointLine = line
                total += 1
                if total & 511 == 0 { operations.reading(file: index, bytes: reader.compressedBytesRead, rows: total) }
                if batch.rows >= batchRows {
                    try flush(&batch, state: state, pass: pass, whileSending: whileSending)
                }
                if total % 250_000 == 0 { logger.info("read \(total) audience rows") }
            }
            operations.reading(file: index, bytes: reader.fileSize, rows: total)
            // Mark the file done even when its last rows were skipped, so a resume starts at the next file.
            batch.checkpointFile = index + 1
            batch.checkpointLine = 0
            try flush(&batch, state: state, pass: pass, force: true, whileSending: whileSending)
        }
        try Self.wrap(.preparing) { () throws(StateError) in try state.markIngestComplete(pass: pass) }
        logger.info("audience read: \(total) rows this pass")
    }

    /// One audience event into the batch: its shard's, rendered, a recipient or an invalid row.
    func accept(_ event: AudienceEvent, into batch: inout IngestBatch, renderer: RecipientRenderer, apnsIds: APNsIdGenerator) {
        guard operations.owns(event) else { return }   // --shard: another shard's row
        batch.rows += 1
        switch event {
        case .invalid(let row):
            batch.invalid.append(row)
        case .record(let record):
            switch renderer.render(record) {
            case .invalid(let row):
                batch.invalid.append(row)
            case .recipient(let payload, let headers, let registeredAt, let due, let arm, let route):
                // Made in place: a copy of the recipient on its way into the batch costs more than its route.
                batch.recipients.append(IngestBatch.Recipient(
                    token: record.token, location: record.location, recipientId: record.recipientId ?? "", payload: payload,
                    apnsId: apnsIds.id(for: record.token), headers: headers,
                    registeredAt: registeredAt, timezone: due?.zone, dueAt: due?.dueAt, arm: arm,
                    app: route.app, environment: UInt8(route.environment.rawValue)))
            }
        }
    }

    private func flush(_ batch: inout IngestBatch, state: RunState, pass: Int, force: Bool = false,
                       whileSending: SendWhileReading?) throws(RunFailure) {
        guard force || !batch.isEmpty else { return }
        let b = batch
        if let whileSending {
            try whileSending.record(b, state: state)
        } else {
            try Self.wrap(.preparing) { () throws(StateError) in try state.ingest(b, pass: pass) }
        }
        batch = IngestBatch()
        CrashPoint.ingest.reached()
    }
}
