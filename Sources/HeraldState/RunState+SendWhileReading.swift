import Foundation
import GRDB
import HeraldCore

/// What one batch recorded while sending goes on (`audience.prescan: false`).
public struct StreamedBatch: Sendable, Equatable {
    /// Rows whose token is new to the run: recipients now, claimable at once unless suppressed.
    public var recipients = 0
    /// Rows whose token the run already has (earlier in this batch, file or another file).
    public var duplicates = 0
    /// New recipients marked `suppressed` (suppression list) as they were recorded.
    public var suppressed = 0
    public init() {}
}

/// Recording the audience while sending (`audience.prescan: false`): each row becomes a recipient
/// in the transaction that stages it, so the sender can claim it as soon as that batch commits.
///
/// The reading-first path (`ingest` then `markIngestComplete`) deduplicates once, by sorting, when
/// the whole audience is staged; here a row must be decided at once, so each token is probed in
/// an index on (run, token) that exists only while such an ingest runs. That index is maintained
/// row by row (a random B-tree insert per recipient), which is why this path is for audiences too
/// large to read first, not the default.
extension RunState {
    /// Readies the run for recording while sending: builds the token index and makes recipients of
    /// any rows an earlier reading-first invocation staged and left without one (a run started
    /// with `prescan: true` and resumed with `false`). Returns those rows' counts.
    public func prepareSendWhileReading() throws(StateError) -> StreamedBatch {
        try write { db in
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS recipient_token ON recipient(run, token)")
            return try adoptStagedRows(db)
        }
    }

    /// Records one batch: staged rows, new recipients, invalid rows, counters and the checkpoint,
    /// in one transaction. A row whose token the run already has is a duplicate: counted, not
    /// staged. `suppressed` maps the batch's tokens on the suppression list (already filtered by
    /// `registered_at`) to their 410 timestamp; they are recorded `suppressed` and never claimable.
    public func ingestWhileSending(_ batch: IngestBatch, suppressed: [SuppressedKey: Int64]) throws(StateError) -> StreamedBatch {
        let now = Date().timeIntervalSince1970
        return try write { db in
            var out = StreamedBatch()
            let probe = try TokenProbe(db, run: id)
            var stage = try StagedRowInsert(db, run: id, pass: 1)
            defer { stage.finish() }
            let adopt = try Self.recipientInsert(db, run: id)
            for r in batch.recipients {
                let token = r.token.hex
                if try probe.contains(token, app: r.app) { out.duplicates += 1; continue }
                try stage.insert(r)
                let suppressedAt = suppressed.isEmpty ? nil : suppressed[SuppressedKey(app: r.app, token: token)]
                try adopt.insert(token: token, file: r.location.file, line: r.location.line, recipientId: r.recipientId,
                                 apnsId: r.apnsId, row: db.lastInsertedRowID, suppressedAt: suppressedAt,
                                 timezone: r.timezone, dueAt: r.dueAt, variant: r.variant, rollout: r.rollout,
                                 route: StoredRoute.pack(app: Int(r.app), environment: Int(r.environment)), now: now)
                out.recipients += 1
                if suppressedAt != nil { out.suppressed += 1 }
            }
            try Self.recordInvalid(batch.invalid, run: id, db: db)
            try db.execute(sql: "UPDATE run SET rows = rows + ?, duplicates = duplicates + ?, ingested_file = ?, ingested_line = ? WHERE id = ?",
                           arguments: [batch.rows, out.duplicates, batch.checkpointFile, batch.checkpointLine, id])
            return out
        }
    }

    /// Whether recipients were already made while reading (this or an earlier invocation sent
    /// while it read): `markIngestComplete` then adopts what is left instead of deduplicating from scratch.
    func hasRecipients(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM recipient WHERE run = ?)", arguments: [id]) ?? false
    }

    /// Completes a first pass that was recorded (at least partly) while sending: adopts rows a
    /// reading-first invocation staged since, then drops the token index.
    func completeSendWhileReading(_ db: Database) throws {
        try db.execute(sql: "CREATE INDEX IF NOT EXISTS recipient_token ON recipient(run, token)")
        _ = try adoptStagedRows(db)
        try db.execute(sql: "DROP INDEX recipient_token")
        try db.execute(sql: "UPDATE run SET ingest_complete = 1, new_recipients = 0, vanished_recipients = 0 WHERE id = ?", arguments: [id])
    }

    /// Staged first-pass rows after the last one that became a recipient (recipients are made in
    /// row order, so those are exactly the rows a reading-first invocation appended): each becomes
    /// a recipient, or, if its token is already one, is counted a duplicate and deleted.
    private func adoptStagedRows(_ db: Database) throws -> StreamedBatch {
        var out = StreamedBatch()
        // The run's newest recipient is near the end of the table: a backward rowid scan finds it at once.
        let last = try Int64.fetchOne(db, sql: "SELECT row FROM recipient NOT INDEXED WHERE run = ? AND row IS NOT NULL ORDER BY seq DESC LIMIT 1",
                                      arguments: [id]) ?? 0
        let rows = try RawStatement(db, sql: """
            SELECT id, token, file, line, recipient_id, apns_id, timezone, due_at, variant, rollout, route FROM audience_row
            WHERE run = ? AND pass = 1 AND id > ? ORDER BY id
            """)
        let now = Date().timeIntervalSince1970
        rows.bind(1, id)
        rows.bind(2, last)
        let probe = try TokenProbe(db, run: id)
        let drop = try RawStatement(db, sql: "DELETE FROM audience_row WHERE id = ?")
        let adopt = try Self.recipientInsert(db, run: id)
        var duplicates: [Int64] = []
        try rows.forEachRow { r in
            let token = r.string(1)
            if try probe.contains(token, app: UInt16(truncatingIfNeeded: r.int(10) >> 2)) { duplicates.append(r.int64(0)); return }
            try adopt.insert(token: token, file: r.string(2), line: r.int(3), recipientId: r.string(4), apnsId: r.string(5),
                             row: r.int64(0), suppressedAt: nil, timezone: r.optionalString(6),
                             dueAt: r.optionalDouble(7), variant: r.optionalString(8), rollout: r.int(9) != 0,
                             route: r.int(10), now: now)
            out.recipients += 1
        }
        for rowId in duplicates {
            drop.bind(1, rowId)
            try drop.execute()
        }
        out.duplicates = duplicates.count
        if out.duplicates > 0 {
            try db.execute(sql: "UPDATE run SET duplicates = duplicates + ? WHERE id = ?", arguments: [out.duplicates, id])
        }
        return out
    }

    /// The INSERT of a recipient made while reading (pass 1; `suppressed` when the list says so).
    private static func recipientInsert(_ db: Database, run: Int64) throws -> RecipientInsert {
        let statement = try RawStatement(db, sql: """
            INSERT INTO recipient (run, token, file, line, recipient_id, apns_id, row, seen_pass, added_pass, status, reason, invalidated_at,
                                   timezone, due_at, retry_at, variant, rollout, route)
            VALUES (?, ?, ?, ?, ?, ?, ?, 1, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        statement.bind(1, run)
        return RecipientInsert(statement: statement)
    }
}

/// A token of one app, as the suppression list decides it while reading.
public struct SuppressedKey: Hashable, Sendable {
    public var app: UInt16
    public var token: String
    public init(app: UInt16, token: String) { self.app = app; self.token = token }
}

/// Whether the run already has a recipient with this app and token (the `recipient_token` index).
private struct TokenProbe {
    let statement: RawStatement

    init(_ db: Database, run: Int64) throws {
        statement = try RawStatement(db, sql: "SELECT 1 FROM recipient WHERE run = ? AND token = ? AND route >> 2 = ? LIMIT 1")
        statement.bind(1, run)
    }

    func contains(_ token: String, app: UInt16) throws -> Bool {
        statement.bind(2, token)
        statement.bind(3, Int(app))
        var found = false
        try statement.forEachRow { _ in found = true }
        return found
    }
}

private struct RecipientInsert {
    let statement: RawStatement

    /// `suppressedAt`: the token is on the suppression list (final, whatever its due time).
    func insert(token: String, file: String, line: Int, recipientId: String, apnsId: String, row: Int64, suppressedAt: Int64?,
                timezone: String?, dueAt: Double?, variant: String?, rollout: Bool, route: Int, now: Double) throws {
        var start = RunState.start(dueAt: dueAt, now: now, variant: variant, rollout: rollout)
        if suppressedAt != nil { start = (.suppressed, nil, "suppression_list") }
        statement.bind(2, token)
        statement.bind(3, file)
        statement.bind(4, line)
        statement.bind(5, recipientId)
        statement.bind(6, apnsId)
        statement.bind(7, row)
        statement.bind(8, start.status.rawValue)
        statement.bind(9, start.reason)
        statement.bind(10, suppressedAt)
        statement.bind(11, timezone)
        statement.bind(12, dueAt)
        statement.bind(13, start.retryAt)
        statement.bind(14, variant)
        statement.bind(15, rollout ? 1 : 0)
        statement.bind(16, route)
        try statement.execute()
    }
}
