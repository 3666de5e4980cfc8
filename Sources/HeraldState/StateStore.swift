import Foundation
import GRDB
import HeraldCore

/// The campaign's state file: every recipient, every attempt, the ingest checkpoint.
///
/// Crash safety is the product: a recipient is committed as `inflight` before its request leaves and
/// its answer is committed after, in batches (one transaction per batch, so SQLite is not the
/// bottleneck). WAL with `synchronous=FULL` makes each commit survive a power loss, not only a crash.
public final class StateStore: Sendable {
    public let path: String
    let db: DatabaseQueue

    public init(path: String) throws(StateError) {
        self.path = path
        do {
            let dir = (path as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: dir.isEmpty ? "." : dir, withIntermediateDirectories: true)
            // Created 0600 before SQLite opens it; SQLite gives -wal and -shm the same mode.
            if !FileManager.default.fileExists(atPath: path) {
                let fd = open(path, O_CREAT | O_WRONLY, 0o600)
                guard fd >= 0 else { throw StateError(path: path, message: "cannot create: \(String(cString: strerror(errno)))") }
                close(fd)
            }
            var config = Configuration()
            config.prepareDatabase { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
            }
            config.busyMode = .timeout(5)
            db = try DatabaseQueue(path: path, configuration: config)
            _ = try db.writeWithoutTransaction { db in try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
            try StateSchema.migrator.migrate(db)
        } catch {
            throw StateError(path: path, error)
        }
    }

    func write<T>(_ body: (Database) throws -> T) throws(StateError) -> T {
        do { return try db.write(body) } catch { throw StateError(path: path, error) }
    }

    func read<T>(_ body: (Database) throws -> T) throws(StateError) -> T {
        do { return try db.read(body) } catch { throw StateError(path: path, error) }
    }

    // MARK: Runs

    /// The run to continue: the last one if there is any (finished or not), else a new one.
    /// A finished run is returned as such: the campaign sends nothing more.
    public func openRun(campaign: String, now: Date = Date()) throws(StateError) -> RunInfo {
        try write { db in
            if let row = try Row.fetchOne(db, sql: "SELECT * FROM run ORDER BY id DESC LIMIT 1") {
                return RunInfo(row: row, resumed: true)
            }
            let runId = UUID().uuidString.lowercased()
            try db.execute(sql: "INSERT INTO run (run_id, campaign, started_at) VALUES (?, ?, ?)",
                           arguments: [runId, campaign, Timestamp.iso(now)])
            let row = try Row.fetchOne(db, sql: "SELECT * FROM run WHERE id = ?", arguments: [db.lastInsertedRowID])!
            return RunInfo(row: row, resumed: false)
        }
    }

    /// The last run, finished or not (for reports).
    public func lastRun() throws(StateError) -> RunInfo? {
        try read { db in try Row.fetchOne(db, sql: "SELECT * FROM run ORDER BY id DESC LIMIT 1").map { RunInfo(row: $0, resumed: true) } }
    }

    public func finishRun(_ run: RunInfo, now: Date = Date()) throws(StateError) {
        try write { db in
            try db.execute(sql: "UPDATE run SET finished_at = ? WHERE id = ?", arguments: [Timestamp.iso(now), run.id])
        }
    }

    // MARK: Ingest

    /// Records one batch of audience rows and moves the checkpoint, atomically: after a crash the
    /// rows before the checkpoint are all recorded and none after it is.
    public func ingest(_ batch: IngestBatch, run: RunInfo) throws(StateError) -> (added: Int, duplicates: Int) {
        try write { db in
            let insert = try db.cachedStatement(sql: """
                INSERT OR IGNORE INTO recipient (token, file, line, recipient_id, payload, apns_id) VALUES (?, ?, ?, ?, ?, ?)
                """)
            var added = 0
            var duplicates = 0
            for r in batch.recipients {
                try insert.execute(arguments: [r.token.hex, r.location.file, r.location.line, r.recipientId, Data(r.payload), r.apnsId])
                if db.changesCount == 1 { added += 1 } else { duplicates += 1 }
            }
            let invalid = try db.cachedStatement(sql: "INSERT INTO invalid_row (file, line, reason, token_field, detail) VALUES (?, ?, ?, ?, ?)")
            for row in batch.invalid {
                try invalid.execute(arguments: [row.location.file, row.location.line, row.reason.rawValue, row.field, row.detail])
            }
            try db.execute(sql: """
                UPDATE run SET rows = rows + ?, duplicates = duplicates + ?, ingested_file = ?, ingested_line = ? WHERE id = ?
                """, arguments: [batch.rows, duplicates, batch.checkpointFile, batch.checkpointLine, run.id])
            return (added, duplicates)
        }
    }

    public func markIngestComplete(_ run: RunInfo) throws(StateError) {
        try write { db in try db.execute(sql: "UPDATE run SET ingest_complete = 1 WHERE id = ?", arguments: [run.id]) }
    }
}

/// The run being executed or resumed.
public struct RunInfo: Sendable {
    public let id: Int64
    public let runId: String
    public let startedAt: String
    public let finishedAt: String?
    public let ingestComplete: Bool
    /// Audience checkpoint: rows of files before `ingestedFile`, and of that file up to `ingestedLine`, are recorded.
    public let ingestedFile: Int
    public let ingestedLine: Int
    public let rows: Int
    public let duplicates: Int
    public let resumed: Bool

    init(row: Row, resumed: Bool) {
        id = row["id"]; runId = row["run_id"]; startedAt = row["started_at"]; finishedAt = row["finished_at"]
        ingestComplete = (row["ingest_complete"] as Int) != 0
        ingestedFile = row["ingested_file"]; ingestedLine = row["ingested_line"]
        rows = row["rows"]; duplicates = row["duplicates"]
        self.resumed = resumed
    }
}

/// Audience rows read since the last checkpoint.
public struct IngestBatch: Sendable {
    public struct Recipient: Sendable {
        public var token: DeviceToken
        public var location: RowLocation
        public var recipientId: String
        public var payload: [UInt8]
        public var apnsId: String
        public init(token: DeviceToken, location: RowLocation, recipientId: String, payload: [UInt8], apnsId: String) {
            self.token = token; self.location = location; self.recipientId = recipientId; self.payload = payload; self.apnsId = apnsId
        }
    }
    public var recipients: [Recipient] = []
    public var invalid: [InvalidRow] = []
    /// Audience rows in this batch (records and invalid rows, not headers).
    public var rows = 0
    public var checkpointFile = -1
    public var checkpointLine = 0
    public init() {}
    public var isEmpty: Bool { rows == 0 }
}

enum Timestamp {
    static func iso(_ d: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: d)
    }
}
