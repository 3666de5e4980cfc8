import Foundation
import GRDB
import HeraldCore

/// One run's recipients, checkpoint and counters in the state file. Every method is one
/// transaction; the pipeline acts only on what a method has committed.
public struct RunState: Sendable {
    public let store: StateStore
    public let id: Int64
    /// The staged payloads' references this run has read (`claim`).
    let payloadReferences = PayloadReferences()

    /// The condition of the partial status index `recipient_flagged`: every status but pending
    /// and sent. SQLite uses a partial index only for a query whose WHERE repeats this term word
    /// for word (https://sqlite.org/partialindex.html, "Queries Using Partial Indexes"), so a
    /// query for retries, rows in flight or failures says `AND \(flagged)`.
    /// Pending and sent rows are found through the run's seqs (`recipient_run`).
    static let flagged = "status NOT IN ('pending', 'sent')"

    /// Marks a statement that may read every row of the run (pending and sent rows have no status
    /// index). Each runs once per invocation, audience pass or report, never per push; the plan
    /// audit test (HeraldStateTests) fails any other statement that walks a run or the whole table.
    static let walksRun = "/* walks the run */"

    func write<T>(_ body: (Database) throws -> T) throws(StateError) -> T { try store.write(body) }
    func read<T>(_ body: (Database) throws -> T) throws(StateError) -> T { try store.read(body) }

    public func reload() throws(StateError) -> RunInfo {
        try read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM run WHERE id = ?", arguments: [id]) else {
                throw StateError(path: store.path, message: "run \(id) is missing from the state file")
            }
            return RunInfo(row: row, disposition: .resumed)
        }
    }

    /// Marks the run finished and drops its staged rows: every recipient is final, so no payload
    /// will be sent again, and a recurring campaign's state file would otherwise keep every
    /// run's rendered payloads (hundreds of MB a million recipients). Recipients keep their
    /// (now dangling) `row` number; only claiming and the suppression check join on it, and
    /// neither runs for a finished run.
    public func finish(now: Date = Date()) throws(StateError) {
        try write { db in
            try db.execute(sql: "UPDATE run SET finished_at = ? WHERE id = ?", arguments: [Timestamp.iso(now), id])
            // The staged rows are normally this run's alone: then the table is emptied whole, which
            // SQLite does page by page instead of row by row ("uses an optimization to erase the
            // entire table content without having to visit each row of the table individually",
            // https://sqlite.org/lang_delete.html#the_truncate_optimization). The check reads one
            // column of each row, a small part of what a row-by-row deletion costs.
            let othersStaged = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM audience_row WHERE run != ?)", arguments: [id]) ?? true
            try Self.withFastSecureDelete(db) {
                if othersStaged {
                    try db.execute(sql: "DELETE FROM audience_row WHERE run = ?", arguments: [id])
                } else {
                    try db.execute(sql: "DELETE FROM audience_row")
                }
                try db.execute(sql: "DELETE FROM payload_reference WHERE run = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM variant_payload WHERE run = ?", arguments: [id])
            }
        }
    }

    /// Runs `body` with `secure_delete` at FAST, then puts the connection's setting back.
    ///
    /// Emptying the staging table frees every page of it. With `secure_delete` on (the default of
    /// Debian's and Ubuntu's SQLite builds, compiled with SQLITE_SECURE_DELETE) each freed page is
    /// first overwritten with zeros, which writes the whole table once more through the WAL and
    /// again at the checkpoint, on the run's critical path and in the reports' writeback after it
    /// (the figures behind this: CHANGELOG.md). FAST "will overwrite
    /// deleted content with zeros only if doing so does not increase the amount of I/O ... purging
    /// all old content from b-tree pages, but leaving forensic traces on freelist pages"
    /// (https://sqlite.org/pragma.html#pragma_secure_delete). The freed pages, with the rendered
    /// payloads in them, stay in the file until a later run reuses them or `VACUUM` rewrites it:
    /// the same owner-only file keeps every recipient's token and ids anyway (docs/how-a-run-works.md).
    static func withFastSecureDelete(_ db: Database, _ body: () throws -> Void) throws {
        // 0 off, 1 on, 2 fast; set back by name: "PRAGMA secure_delete = 2" would mean on.
        let previous = try Int.fetchOne(db, sql: "PRAGMA secure_delete") ?? 0
        try db.execute(sql: "PRAGMA secure_delete = FAST")
        defer { try? db.execute(sql: "PRAGMA secure_delete = \(["OFF", "ON", "FAST"][min(max(previous, 0), 2)])") }
        try body()
    }

    // MARK: Due times

    /// The recipient columns a staged row's due time and experiment arm decide (`dueValues`
    /// gives their values).
    static let dueColumns = "timezone, due_at, variant, rollout, status, retry_at, reason"

    /// A new recipient's start from its staged row's `due_at` (`schedule`) and experiment arm,
    /// with `now` the SQL parameter holding the current UNIX time: held out → `held_out`; outside
    /// the test with no winner yet → `awaiting_winner`; otherwise due (or no schedule) →
    /// `pending`; due later → `scheduled` until then; never (+Inf: no window opens before the
    /// job's absolute deadline, or at all) → `throttled`, reason `window_missed`, final.
    /// `experiment`: the run has one (`run.experiment`); without, the arms' tests are left out,
    /// as every row is then in none: they would cost a few column reads per recipient for nothing.
    static func dueValues(now: String, experiment: Bool) -> String {
        guard experiment else {
            return """
                timezone, due_at, NULL, 0,
                CASE WHEN due_at IS NULL OR due_at <= \(now) THEN 'pending' WHEN due_at > \(neverDue) THEN 'throttled' ELSE 'scheduled' END,
                CASE WHEN due_at > \(now) AND due_at <= \(neverDue) THEN due_at END,
                CASE WHEN due_at > \(neverDue) THEN '\(windowMissedReason)' ELSE '' END
                """
        }
        return "timezone, due_at, variant, rollout, " + startValues(now: now)
    }

    /// Whether the run's staged rows have experiment arms (`StagedRowInsert` records it).
    static func hasExperiment(run: Int64, db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT experiment FROM run WHERE id = ?", arguments: [run]) ?? false
    }

    /// `status, retry_at, reason` of a recipient starting now, from its `due_at`, `variant` and
    /// `rollout` (a staged row's or its own).
    static func startValues(now: String) -> String {
        """
        CASE WHEN \(holdoutRow) THEN 'held_out' WHEN \(waitingRow) THEN 'awaiting_winner'
             WHEN due_at IS NULL OR due_at <= \(now) THEN 'pending' WHEN due_at > \(neverDue) THEN 'throttled' ELSE 'scheduled' END,
        CASE WHEN \(holdoutRow) OR \(waitingRow) THEN NULL WHEN due_at > \(now) AND due_at <= \(neverDue) THEN due_at END,
        CASE WHEN \(holdoutRow) OR \(waitingRow) THEN '' WHEN due_at > \(neverDue) THEN '\(windowMissedReason)' ELSE '' END
        """
    }

    /// A staged row (or recipient) of an experiment's holdout, and one waiting for its winner.
    static let holdoutRow = "variant IS '\(ExperimentSpec.holdoutName)'"
    static let waitingRow = "(rollout = 1 AND variant IS NULL)"

    /// Above any real time: `due_at` is +Inf when no window opens.
    static let neverDue = "1e300"
    public static let windowMissedReason = "window_missed"

    /// How a recipient made one row at a time starts (the same rule as `dueValues`).
    static func start(dueAt: Double?, now: Double, variant: String? = nil, rollout: Bool = false) -> (status: StoredStatus, retryAt: Double?, reason: String) {
        if variant == ExperimentSpec.holdoutName { return (.heldOut, nil, "") }
        if rollout && variant == nil { return (.awaitingWinner, nil, "") }
        guard let dueAt, dueAt > now else { return (.pending, nil, "") }
        if dueAt > 1e300 { return (.throttled, nil, windowMissedReason) }
        return (.scheduled, dueAt, "")
    }

    // MARK: Audience files

    /// The audience files this run read, as they were when it last started reading them.
    public func audienceFiles() throws(StateError) -> [AudienceFingerprint] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM audience_file WHERE run = ? ORDER BY idx", arguments: [id]).map {
                AudienceFingerprint(name: $0["name"], path: $0["path"], size: $0["size"], mtime: $0["mtime"], sha256: $0["sha256"])
            }
        }
    }

    /// Records the fingerprints the first time the run reads its audience.
    public func recordAudienceFiles(_ files: [AudienceFingerprint]) throws(StateError) {
        try write { db in try Self.replaceFiles(files, run: id, db: db) }
    }

    /// The audience changed under an unfinished run: start reading it again from the top as a new
    /// pass. The checkpoint, row counters and invalid rows are the audience's and start over;
    /// recipients stay, so a token already sent is never sent again (identity is the token), and
    /// the pass numbers tell new recipients from vanished ones when the pass completes.
    public func startNewAudiencePass(_ files: [AudienceFingerprint]) throws(StateError) {
        try write { db in
            try db.execute(sql: """
                UPDATE run SET audience_pass = audience_pass + 1, ingest_complete = 0, ingested_file = -1, ingested_line = 0,
                    rows = 0, duplicates = 0, new_recipients = 0, vanished_recipients = 0, suppression_checked = 0 WHERE id = ?
                """, arguments: [id])
            try db.execute(sql: "DELETE FROM invalid_row WHERE run = ?", arguments: [id])
            try Self.pruneUnreferencedRows(run: id, db: db)
            try Self.replaceFiles(files, run: id, db: db)
        }
    }

    static func replaceFiles(_ files: [AudienceFingerprint], run: Int64, db: Database) throws {
        try db.execute(sql: "DELETE FROM audience_file WHERE run = ?", arguments: [run])
        for (i, f) in files.enumerated() {
            try db.execute(sql: "INSERT INTO audience_file (run, idx, name, path, size, mtime, sha256) VALUES (?, ?, ?, ?, ?, ?, ?)",
                           arguments: [run, i, f.name, f.path, f.size, f.mtime, f.sha256])
        }
    }

    // MARK: Ingest

    /// Records one batch of audience rows and moves the checkpoint, atomically: after a crash the
    /// rows before the checkpoint are all recorded and none after it is. Rows are only appended
    /// here; duplicates are resolved once the whole audience is read (`markIngestComplete`).
    public func ingest(_ batch: IngestBatch, pass: Int = 1) throws(StateError) {
        try write { db in
            var stage = try StagedRowInsert(db, run: id, pass: pass)
            defer { stage.finish() }
            for r in batch.recipients { try stage.insert(r) }
            try Self.recordInvalid(batch.invalid, run: id, db: db)
            try db.execute(sql: "UPDATE run SET rows = rows + ?, ingested_file = ?, ingested_line = ? WHERE id = ?",
                           arguments: [batch.rows, batch.checkpointFile, batch.checkpointLine, id])
        }
    }

    /// Invalid rows of a batch (`invalid.csv`), in the batch's transaction.
    static func recordInvalid(_ rows: [InvalidRow], run: Int64, db: Database) throws {
        let invalid = try db.cachedStatement(sql: "INSERT INTO invalid_row (run, file, line, reason, token_field, detail) VALUES (?, ?, ?, ?, ?, ?)")
        for row in rows {
            try invalid.execute(arguments: [run, row.location.file, row.location.line, row.reason.rawValue, row.field, row.detail])
        }
    }

    /// The audience is fully read: keep each token's first row as the recipient (in audience
    /// order), count the rest as duplicates, in one transaction. After a later pass (the audience
    /// changed), tokens already recorded keep their state (a token sent is never sent again; the
    /// undecided ones take the new row's data), new tokens are added, and recipients the new
    /// files no longer contain that are still undecided are not sent: `suppressed`
    /// (`vanished_from_audience`).
    public func markIngestComplete(pass: Int = 1) throws(StateError) {
        let scratch = (store.path as NSString).deletingLastPathComponent
        try write { db in
            if pass == 1, try hasRecipients(db) || db.indexes(on: "recipient").contains(where: { $0.name == "recipient_token" }) {
                // Recorded while sending (`prescan: false`): duplicates are already decided.
                try completeSendWhileReading(db)
                return
            }
            if pass == 1 {
                try Self.settleFirstPass(run: id, scratchDirectory: scratch, db: db)
                return
            }
            // Built by sorting, after the fact: cheap, and the appends above stay index-free.
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS audience_row_token ON audience_row(run, pass, token, id)")
            let valid = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM audience_row WHERE run = ? AND pass = ?", arguments: [id, pass]) ?? 0
            let distinct = try Int.fetchOne(db, sql: """
                SELECT COUNT(*) FROM (SELECT 1 FROM audience_row WHERE run = ? AND pass = ? GROUP BY token, route >> 2)
                """, arguments: [id, pass]) ?? 0
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS recipient_token ON recipient(run, token)")
            try db.execute(sql: """
                \(Self.walksRun) UPDATE recipient SET seen_pass = ? WHERE run = ? AND (token, route >> 2) IN (SELECT token, route >> 2 FROM audience_row WHERE run = ? AND pass = ?)
                """, arguments: [pass, id, id, pass])
            try db.execute(sql: """
                \(Self.walksRun) UPDATE recipient SET (file, line, recipient_id, row, payload, route) =
                    (SELECT file, line, recipient_id, id, NULL, (recipient.route & 2) | a.route FROM audience_row a
                     WHERE a.run = recipient.run AND a.pass = ? AND a.token = recipient.token AND a.route >> 2 = recipient.route >> 2 ORDER BY a.id LIMIT 1)
                WHERE run = ? AND seen_pass = ? AND status IN ('pending', 'retry', 'scheduled', 'awaiting_winner') AND attempts = 0
                """, arguments: [pass, id, pass])
            try db.execute(sql: """
                \(Self.walksRun) INSERT INTO recipient (run, token, file, line, recipient_id, apns_id, row, seen_pass, added_pass, route, \(Self.dueColumns))
                SELECT run, token, file, line, recipient_id, apns_id, id, ?1, ?1, route, \(Self.dueValues(now: "?4", experiment: try Self.hasExperiment(run: id, db: db))) FROM audience_row a
                WHERE a.id IN (SELECT MIN(id) FROM audience_row WHERE run = ?2 AND pass = ?3 GROUP BY token, route >> 2)
                    AND NOT EXISTS (SELECT 1 FROM recipient r WHERE r.run = a.run AND r.token = a.token AND r.route >> 2 = a.route >> 2) ORDER BY a.id
                """, arguments: [pass, id, pass, Date().timeIntervalSince1970])
            let newCount = db.changesCount
            let vanished = try Int.fetchOne(db, sql: "\(Self.walksRun) SELECT COUNT(*) FROM recipient WHERE run = ? AND seen_pass < ?", arguments: [id, pass]) ?? 0
            try db.execute(sql: """
                \(Self.walksRun) UPDATE recipient SET status = 'suppressed', reason = 'vanished_from_audience'
                WHERE run = ? AND seen_pass < ? AND status IN ('pending', 'retry', 'inflight', 'scheduled', 'awaiting_winner')
                """, arguments: [id, pass])
            try db.execute(sql: "DROP INDEX recipient_token")
            try db.execute(sql: "DROP INDEX audience_row_token")
            try Self.pruneUnreferencedRows(run: id, db: db)
            try db.execute(sql: """
                UPDATE run SET ingest_complete = 1, duplicates = ?, new_recipients = ?, vanished_recipients = ? WHERE id = ?
                """, arguments: [valid - distinct, newCount, vanished, id])
        }
    }

    /// The first pass: every staged row whose token no earlier row has becomes a recipient, in
    /// audience order (rowid order, so no sort; the NOT IN is a rowid seek in the temp table).
    /// The duplicates' rows stay staged, unreferenced, until the run finishes (or a new pass
    /// prunes them): deleting them, scattered as they are, would dirty most pages of the table and
    /// rewrite it through the WAL.
    static func settleFirstPass(run: Int64, scratchDirectory: String, db: Database,
                                tokenKey: (UnsafeRawBufferPointer) -> TokenKey = TokenKey.init(hex:)) throws {
        let duplicates = try listDuplicateRows(run: run, pass: 1, scratchDirectory: scratchDirectory, db: db, tokenKey: tokenKey)
        let route = try routed(db, run: run) ? "route, " : ""
        try db.execute(sql: """
            INSERT INTO recipient (run, token, file, line, recipient_id, apns_id, row, seen_pass, added_pass, \(route)\(Self.dueColumns))
            SELECT run, token, file, line, recipient_id, apns_id, id, 1, 1, \(route)\(Self.dueValues(now: "?2", experiment: try hasExperiment(run: run, db: db))) FROM audience_row
            WHERE run = ?1 AND pass = 1 AND id NOT IN (SELECT id FROM temp.duplicate_row) ORDER BY id
            """, arguments: [run, Date().timeIntervalSince1970])
        try db.execute(sql: "DROP TABLE temp.duplicate_row")
        try db.execute(sql: "UPDATE run SET ingest_complete = 1, duplicates = ?, new_recipients = 0, vanished_recipients = 0 WHERE id = ?",
                       arguments: [duplicates, run])
    }

    /// Deduplication of a run's first pass: lists in `temp.duplicate_row` every staged row whose
    /// token an earlier row (lower id, so earlier in the audience) already has. Tokens are read
    /// once, in row order, as (token key, row id) pairs into an external sort (memory fixed, spills
    /// to a scratch file in the state directory); equal keys come out together, first row first.
    /// A 32-byte token is its own key, so equal exact keys are equal tokens. Under a hashed key
    /// (other lengths) a row is listed only if its token text equals an earlier row's, looked up,
    /// so a key collision can never drop a recipient. Returns the number of duplicates listed.
    ///
    /// Why exact keys: with 128-bit hashes for every token, both token texts of each duplicate
    /// would have to be looked up (random pages of a table far larger than the page cache), which
    /// costs more than the sort.
    ///
    /// Why not SQL (an index on token, then GROUP BY; or `ORDER BY token`): both sort whole
    /// records carrying the 64-character token text, several times the work of sorting 48-byte
    /// (key, row) entries here.
    /// `tokenKey` is a parameter only so that a test can make every key collide.
    static func listDuplicateRows(run: Int64, pass: Int, scratchDirectory: String, db: Database,
                                  tokenKey: (UnsafeRawBufferPointer) -> TokenKey) throws -> Int {
        let sorter = ExternalSorter(directory: scratchDirectory)
        let scan = try RawStatement(db, sql: "SELECT token, id, \(try routed(db, run: run) ? StoredRoute.app() : "0") FROM audience_row WHERE run = ? AND pass = ?")
        scan.bind(1, run)
        scan.bind(2, pass)
        try scan.forEachRow { row in
            var key = tokenKey(row.bytes(0))
            key.app = UInt16(truncatingIfNeeded: row.int(2))
            try sorter.insert(TokenEntry(key: key, id: row.int64(1)))
        }
        // In the temp database (its own small cache, spilling to a temp file): bounded memory
        // however many duplicates there are.
        try db.execute(sql: "CREATE TEMP TABLE duplicate_row (id INTEGER PRIMARY KEY)")
        let list = try RawStatement(db, sql: "INSERT INTO temp.duplicate_row (id) VALUES (?)")
        let token = try RawStatement(db, sql: "SELECT token FROM audience_row WHERE id = ?")
        func tokenText(_ id: Int64) throws -> [UInt8] {
            token.bind(1, id)
            var text: [UInt8] = []
            try token.forEachRow { text = $0.byteArray(0) }
            return text
        }
        var duplicates = 0
        var first: TokenEntry?
        // The distinct token texts seen under the current key (more than one only on a key
        // collision), fetched only when a key repeats.
        var texts: [[UInt8]] = []
        try sorter.forEach { entry in
            guard let f = first, f.key == entry.key else { first = entry; texts = []; return }
            if entry.key.isExact {
                list.bind(1, entry.id)
                try list.execute()
                duplicates += 1
                return
            }
            if texts.isEmpty { texts = [try tokenText(f.id)] }
            let text = try tokenText(entry.id)
            guard texts.contains(text) else { texts.append(text); return }
            list.bind(1, entry.id)
            try list.execute()
            duplicates += 1
        }
        return duplicates
    }

    /// Staged rows no recipient points at: duplicates, and rows of an earlier pass that a later
    /// pass replaced or never settled.
    static func pruneUnreferencedRows(run: Int64, db: Database) throws {
        try db.execute(sql: """
            \(Self.walksRun) DELETE FROM audience_row WHERE run = ? AND id NOT IN (SELECT row FROM recipient WHERE run = ? AND row IS NOT NULL)
            """, arguments: [run, run])
        try db.execute(sql: """
            \(Self.walksRun) DELETE FROM variant_payload WHERE run = ? AND row NOT IN (SELECT row FROM recipient WHERE run = ? AND row IS NOT NULL)
            """, arguments: [run, run])
    }
}

/// The INSERT of a staged audience row (payload and per-recipient headers), for both ways of
/// recording an audience. Each row's text and payload are copied into one reused buffer and bound
/// from there without another copy (`bindStatic`), the statement run while the buffer is in hand;
/// `finish` drops the bindings so no pointer outlives the buffer. The row's id is then the
/// connection's `lastInsertedRowID`.
///
/// Payloads are kept as differences from a reference payload of the run (`PayloadReference`).
/// The first payload of each batch decides whether the run's newest reference still fits: when it
/// has none, or that payload would keep more than half its size against it (a job whose template
/// changed between invocations, a locale change), the payload becomes the run's new reference,
/// inserted in the batch's transaction before any row that uses it. Each variant of an experiment has its own references, decided at its own
/// first payload of the batch: variant b's payloads kept against variant a's would keep more of
/// their bytes, and cost more to encode and decode.
struct StagedRowInsert {
    private let statement: RawStatement
    private let db: Database
    private let run: Int64
    /// Whether the run's rows have apps and environments of their own.
    private let routed: Bool
    private var bytes: [UInt8] = []
    /// Where each payload is encoded, and decoded again to be checked (`PayloadReference.encode`).
    private var scratch: [UInt8] = []
    /// The run's newest references, newest first (at most `keptReferences`), each with the
    /// variant it was made for (nil: no experiment).
    private var references: [(variant: String?, reference: PayloadReference)] = []
    /// The reference chosen in this batch for each variant's payloads (nil: no experiment): a
    /// handful of entries, searched in order.
    private var chosen: [(variant: String?, reference: PayloadReference)] = []
    static let keptReferences = 8
    /// Whether this batch has recorded that the run has an experiment.
    private var markedExperiment = false
    /// The INSERT of `variant_payload`, made at the first row that needs it, and where each of
    /// its payloads is encoded.
    private var alternative: RawStatement?
    private var alternativeBytes: [UInt8] = []
    /// Smaller payloads are kept as they are: too short to share anything worth a reference.
    static let smallestReference = 16

    init(_ db: Database, run: Int64, pass: Int) throws {
        self.db = db
        self.run = run
        // A run for one app in one environment leaves `app` and `environment` at their defaults.
        routed = try RunState.routed(db, run: run)
        statement = try RawStatement(db, sql: """
            INSERT INTO audience_row (run, pass, token, file, line, recipient_id, payload, apns_id, priority, collapse_id, expiration,
                                      registered_at, timezone, due_at, payload_reference, variant, rollout\(routed ? ", route" : ""))
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?\(routed ? ", ?" : ""))
            """)
        statement.bind(1, run)
        statement.bind(2, pass)
        bytes.reserveCapacity(1024)
        references = try Row.fetchAll(db, sql: "SELECT id, bytes, variant FROM payload_reference WHERE run = ? ORDER BY id DESC LIMIT \(Self.keptReferences)",
                                      arguments: [run]).map { (variant: $0["variant"], reference: PayloadReference(id: $0["id"], bytes: [UInt8]($0["bytes"] as Data))) }
    }

    mutating func insert(_ r: IngestBatch.Recipient) throws {
        bytes.removeAll(keepingCapacity: true)
        let token = bytes.appendText(r.token.hex), file = bytes.appendText(r.location.file)
        let recipientId = bytes.appendText(r.recipientId), apnsId = bytes.appendText(r.apnsId)
        let payloadStart = bytes.count
        var referenceId: Int64?
        if let reference = try reference(for: r.payload, variant: r.variant), reference.encode(r.payload, into: &bytes, scratch: &scratch) {
            referenceId = reference.id
        } else {
            bytes.append(contentsOf: r.payload)
        }
        let payload = payloadStart..<bytes.count
        let collapseId = r.headers?.collapseId.map { bytes.appendText($0) }
        let expiration = r.headers.map { bytes.appendText($0.expiration.storageText) }
        let variant = r.variant.map { bytes.appendText($0) }
        // The closure below takes values, not `r`: reading `r`'s fields in it copied the whole
        // recipient (its strings and arrays retained) once per field.
        let line = r.location.line, priority = r.headers?.priority, registeredAt = r.registeredAt, timezone = r.timezone
        let dueAt = r.dueAt, rollout = r.rollout, route = routed ? StoredRoute.pack(app: Int(r.app), environment: Int(r.environment)) : nil
        let insert = statement
        try bytes.withUnsafeBytes { buffer in
            insert.bindStatic(3, text: UnsafeRawBufferPointer(rebasing: buffer[token]))
            insert.bindStatic(4, text: UnsafeRawBufferPointer(rebasing: buffer[file]))
            insert.bind(5, line)
            insert.bindStatic(6, text: UnsafeRawBufferPointer(rebasing: buffer[recipientId]))
            insert.bindStatic(7, blob: UnsafeRawBufferPointer(rebasing: buffer[payload]))
            insert.bindStatic(8, text: UnsafeRawBufferPointer(rebasing: buffer[apnsId]))
            insert.bind(9, priority)
            if let collapseId { insert.bindStatic(10, text: UnsafeRawBufferPointer(rebasing: buffer[collapseId])) } else { insert.bindNull(10) }
            if let expiration { insert.bindStatic(11, text: UnsafeRawBufferPointer(rebasing: buffer[expiration])) } else { insert.bindNull(11) }
            insert.bind(12, registeredAt)
            insert.bind(13, timezone)
            insert.bind(14, dueAt)
            insert.bind(15, referenceId)
            if let variant { insert.bindStatic(16, text: UnsafeRawBufferPointer(rebasing: buffer[variant])) } else { insert.bindNull(16) }
            insert.bind(17, rollout ? 1 : 0)
            if let route { insert.bind(18, route) }
            try insert.execute()
        }
        if let arm = r.arm {
            if !markedExperiment {
                // The run has an experiment: its recipients are made with the arms' rules (`dueValues`).
                try db.execute(sql: "UPDATE run SET experiment = 1 WHERE id = ? AND experiment = 0", arguments: [run])
                markedExperiment = true
            }
            if !arm.alternatives.isEmpty { try insertAlternatives(arm.alternatives, row: db.lastInsertedRowID) }
        }
    }

    /// A row waiting for an experiment's winner: every variant's payload and headers, each payload
    /// kept against its variant's reference as staged rows' are (three quarters of an audience may
    /// wait, with one payload per variant each).
    private mutating func insertAlternatives(_ alternatives: [VariantPayload], row: Int64) throws {
        if alternative == nil {
            alternative = try RawStatement(db, sql: """
                INSERT INTO variant_payload (row, variant, run, payload, priority, collapse_id, expiration, payload_reference)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
        }
        let insert = alternative!
        for a in alternatives {
            alternativeBytes.removeAll(keepingCapacity: true)
            var referenceId: Int64?
            if let reference = try reference(for: a.payload, variant: a.variant),
               reference.encode(a.payload, into: &alternativeBytes, scratch: &scratch) {
                referenceId = reference.id
            } else {
                alternativeBytes.append(contentsOf: a.payload)
            }
            insert.bind(1, row)
            insert.bind(2, a.variant)
            insert.bind(3, run)
            insert.bind(5, a.headers?.priority)
            insert.bind(6, a.headers?.collapseId)
            insert.bind(7, a.headers.map { $0.expiration.storageText })
            insert.bind(8, referenceId)
            try alternativeBytes.withUnsafeBytes { insert.bindStatic(4, blob: $0); try insert.execute() }
            insert.bindNull(4)
        }
    }

    /// The reference this batch's payloads of `variant` are kept against, decided at the first of
    /// them: the variant's newest reference if the payload keeps at most half its size against
    /// it, else the payload itself as the variant's new reference.
    private mutating func reference(for payload: [UInt8], variant: String?) throws -> PayloadReference? {
        for c in chosen where c.variant == variant { return c.reference }
        // Too short to decide anything (a held-out or waiting row's empty payload): the next one decides.
        guard payload.count >= Self.smallestReference else { return nil }
        if let newest = references.first(where: { $0.variant == variant })?.reference {
            var probe: [UInt8] = []
            if newest.encode(payload, into: &probe, scratch: &scratch), probe.count <= payload.count / 2 {
                chosen.append((variant, newest))
                return newest
            }
        }
        try db.execute(sql: "INSERT INTO payload_reference (run, bytes, variant) VALUES (?, ?, ?)", arguments: [run, Data(payload), variant])
        let made = PayloadReference(id: db.lastInsertedRowID, bytes: payload)
        references.insert((variant, made), at: 0)
        if references.count > Self.keptReferences { references.removeLast() }
        chosen.append((variant, made))
        return made
    }

    func finish() { statement.clearBindings(); alternative?.clearBindings() }
}

extension [UInt8] {
    /// Appends the string's UTF-8 bytes; returns where they are.
    mutating func appendText(_ text: String) -> Range<Int> {
        let start = count
        append(contentsOf: text.utf8)
        return start..<count
    }
}

extension ExpirationSpec {
    /// How a per-recipient expiration is kept in the state file: `unset`, `0`, `+seconds` or `@unixtime`.
    var storageText: String {
        switch self {
        case .unset: return "unset"
        case .immediate: return "0"
        case .relative(let s): return "+\(s)"
        case .absolute(let t): return "@\(t)"
        }
    }

    init?(storageText text: String) {
        if text == "unset" { self = .unset; return }
        if text == "0" { self = .immediate; return }
        guard let first = text.first, let n = Int(text.dropFirst()) else { return nil }
        switch first {
        case "+": self = .relative(n)
        case "@": self = .absolute(n)
        default: return nil
        }
    }
}

/// What identifies an audience file's content, to tell whether it changed between a run's starts.
public struct AudienceFingerprint: Sendable, Equatable {
    public var name: String
    public var path: String
    public var size: Int64
    public var mtime: Double
    /// SHA-256 of the file's bytes, hex.
    public var sha256: String
    public init(name: String, path: String, size: Int64, mtime: Double, sha256: String) {
        self.name = name; self.path = path; self.size = size; self.mtime = mtime; self.sha256 = sha256
    }

    /// Same content: the name, size and hash decide; a touched file (new mtime) with the same bytes is the same audience.
    public func sameContent(as other: AudienceFingerprint) -> Bool {
        name == other.name && size == other.size && sha256 == other.sha256
    }
}
