import Foundation
import GRDB
import GRDBSQLite
import HeraldCore

/// The campaign's state file: every recipient, every attempt, the ingest checkpoint.
///
/// Crash safety is the product: a recipient is committed as `inflight` before its request leaves and
/// its answer is committed after, in batches (one transaction per batch, so SQLite is not the
/// bottleneck). WAL with `synchronous=FULL` makes each commit survive a power loss, not only a crash:
/// "The extra WAL sync following each transaction helps ensure that transactions are durable
/// across a power loss" (https://sqlite.org/pragma.html#pragma_synchronous).
public final class StateStore: SQLiteStore, Sendable {
    public let path: String
    let db: DatabaseQueue

    /// How commits reach the disk. `full` (the default, and what `herald run` uses) survives a
    /// power loss; `normal` only a crash of the process, and exists so the benchmark can show
    /// what FULL costs.
    public enum Durability: Sendable { case full, normal }

    /// Opens (creating it 0600 if needed) and migrates the state file. `readOnly` opens an
    /// existing file without writing, for `herald status` beside a running campaign.
    /// The SQLite library in use, "3.40.1" (https://sqlite.org/c3ref/libversion.html).
    public static var sqliteVersion: String { String(cString: sqlite3_libversion()) }

    /// `volume`: how the state directory's filesystem lets SQLite share the file (StateVolume).
    public init(path: String, readOnly: Bool = false, durability: Durability = .full, volume: StateVolume = .local) throws(StateError) {
        self.path = path
        do {
            // A bounded page cache (8 MiB). Appends, the claim index and the report scan are all
            // sequential, so a larger cache only adds memory: it does not make them faster.
            // 8 KiB pages (new files only: a page size "is used to set the page size when the
            // database is first created", https://sqlite.org/pragma.html#pragma_page_size;
            // SQLite's default is 4 KiB): staged rows and recipients are appended and read in
            // bulk, and half as many pages is half the per-page work (WAL frames, page reads,
            // B-tree balancing). Larger pages gain nothing more.
            db = try SQLiteFile.open(path: path, readOnly: readOnly, missing: "no state file yet: the campaign has never run",
                                     journal: volume.stateJournal, synchronousFull: durability == .full, cacheKiB: 8192, pageSize: 8192, busyTimeout: 5)
            if !readOnly {
                try StateSchema.migrator.migrate(db)
            } else if try db.read({ db in try !StateSchema.migrator.hasCompletedMigrations(db) }) {
                throw StateError(path: path, message: "written by an older herald; run `herald run` once to upgrade it")
            }
        } catch {
            throw StateError(path: path, error)
        }
    }

    // MARK: Runs

    /// The run this invocation works on. The last run of the job, if unfinished, is always
    /// resumed first (a rerun after midnight finishes yesterday's `{date}` campaign instead of
    /// starting today's). A finished last run is returned as finished, so nothing more is sent,
    /// unless the campaign's name for `now` differs (a new period) or `newRun` asks for a new run.
    /// `broadcast`: a new run's recipients are broadcast channels (a resumed run keeps what it was).
    public func openRun(campaign: CampaignName, newRun: Bool = false, now: Date = Date(), broadcast: Bool = false) throws(StateError) -> RunInfo {
        try write { db in
            if let existing = try Self.existingRun(db, campaign: campaign, newRun: newRun, now: now) { return existing }
            let runId = UUID().uuidString.lowercased()
            try db.execute(sql: "INSERT INTO run (run_id, campaign, campaign_template, started_at, broadcast) VALUES (?, ?, ?, ?, ?)",
                           arguments: [runId, campaign.resolved(at: now), campaign.template, Timestamp.iso(now), broadcast ? 1 : 0])
            let row = try Row.fetchOne(db, sql: "SELECT * FROM run WHERE id = ?", arguments: [db.lastInsertedRowID])!
            return RunInfo(row: row, disposition: .new)
        }
    }

    /// The run `openRun` would return without starting one (the unfinished last run, or the
    /// finished one of the same name), or nil when it would start a new run: a new run may be
    /// refused before anything about it is recorded.
    public func runToResume(campaign: CampaignName, newRun: Bool = false, now: Date = Date()) throws(StateError) -> RunInfo? {
        try read { db in try Self.existingRun(db, campaign: campaign, newRun: newRun, now: now) }
    }

    private static func existingRun(_ db: Database, campaign: CampaignName, newRun: Bool, now: Date) throws -> RunInfo? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM run ORDER BY id DESC LIMIT 1") else { return nil }
        let last = RunInfo(row: row, disposition: .resumed)
        if last.finishedAt == nil { return last }
        if !newRun && last.campaign == campaign.resolved(at: now) { return RunInfo(row: row, disposition: .finished) }
        return nil
    }

    /// Whether no earlier run has this resolved campaign name (a `--new-run` repeats a name).
    public func isFirstRun(named campaign: String, id: Int64) throws(StateError) -> Bool {
        try read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM run WHERE campaign = ? AND id < ?", arguments: [campaign, id]) == 0 }
    }

    /// Every run of the job, oldest first (for `herald status`).
    public func runs() throws(StateError) -> [RunInfo] {
        try read { db in try Row.fetchAll(db, sql: "SELECT * FROM run ORDER BY id").map { RunInfo(row: $0, disposition: .resumed) } }
    }

    /// Per-run operations (recipients, checkpoints, counts).
    public func run(_ info: RunInfo) -> RunState { RunState(store: self, id: info.id) }
}

/// The run being executed or resumed.
public struct RunInfo: Sendable {
    /// How `openRun` found it.
    public enum Disposition: Sendable { case new, resumed, finished }

    public let id: Int64
    public let runId: String
    /// The campaign's resolved name (periods filled in when the run first started).
    public let campaign: String
    public let startedAt: String
    public let finishedAt: String?
    public let ingestComplete: Bool
    /// Audience checkpoint: rows of files before `ingestedFile`, and of that file up to `ingestedLine`, are recorded.
    public let ingestedFile: Int
    public let ingestedLine: Int
    public let rows: Int
    public let duplicates: Int
    /// 1, plus one for every time a resume found the audience files changed and read them again.
    public let audiencePass: Int
    public let newRecipients: Int
    public let vanishedRecipients: Int
    public let disposition: Disposition
    /// Its recipients are broadcast channels (`push.broadcast`): reports name them `channel_id`.
    public let broadcast: Bool

    public var resumed: Bool { disposition != .new }
    public var audienceChanged: Bool { audiencePass > 1 }
    /// When the run started, for resolving its period placeholders.
    public var startDate: Date { Timestamp.date(startedAt) ?? Date() }

    init(row: Row, disposition: Disposition) {
        id = row["id"]; runId = row["run_id"]; campaign = row["campaign"]; startedAt = row["started_at"]; finishedAt = row["finished_at"]
        ingestComplete = (row["ingest_complete"] as Int) != 0
        ingestedFile = row["ingested_file"]; ingestedLine = row["ingested_line"]
        rows = row["rows"]; duplicates = row["duplicates"]
        audiencePass = row["audience_pass"]; newRecipients = row["new_recipients"]; vanishedRecipients = row["vanished_recipients"]
        self.disposition = disposition
        broadcast = (row["broadcast"] as Int?) == 1
    }
}

/// A recipient's own header values, when the job templates them.
public struct RecipientHeaders: Sendable, Equatable {
    public var priority: Int
    public var collapseId: String?
    public var expiration: ExpirationSpec
    public init(priority: Int, collapseId: String?, expiration: ExpirationSpec) {
        self.priority = priority; self.collapseId = collapseId; self.expiration = expiration
    }
}

/// One variant's payload and headers for a recipient waiting for an experiment's winner.
public struct VariantPayload: Sendable {
    public var variant: String
    public var payload: [UInt8]
    public var headers: RecipientHeaders?
    public init(variant: String, payload: [UInt8], headers: RecipientHeaders?) {
        self.variant = variant; self.payload = payload; self.headers = headers
    }
}

/// A staged row's arm of an experiment.
public final class ExperimentArm: Sendable {
    /// The variant's name, `holdout`, or nil: waiting for a winner not chosen yet.
    public let variant: String?
    /// Outside the test: for the winner.
    public let rollout: Bool
    /// Waiting for a winner not chosen yet: every variant's payload (`variant_payload`).
    public let alternatives: [VariantPayload]
    public init(variant: String?, rollout: Bool, alternatives: [VariantPayload] = []) {
        self.variant = variant; self.rollout = rollout; self.alternatives = alternatives
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
        /// Only when the job templates headers per recipient; nil: the job's.
        public var headers: RecipientHeaders?
        /// `audience.registered_at_field`, ms since the epoch: a token re-registered after its 410 is sent again.
        public var registeredAt: Int64?
        /// `schedule`: the row's time zone as written, and when it is due (UNIX seconds; infinity: never).
        public var timezone: String?
        public var dueAt: Double?
        /// `experiment`: the recipient's arm; nil without one (one pointer, so that a plain
        /// campaign's rows stay as small and cheap to copy as they were).
        public var arm: ExperimentArm? = nil
        public var variant: String? { arm?.variant }
        public var rollout: Bool { arm?.rollout ?? false }
        /// The recipient's app (`RunState.apps`' number) and environment (`APNsEnvironment`'s raw
        /// value): deduplication is per app and token.
        public var app: UInt16 = 0
        public var environment: UInt8 = 0
        public init(token: DeviceToken, location: RowLocation, recipientId: String, payload: [UInt8], apnsId: String,
                    headers: RecipientHeaders? = nil, registeredAt: Int64? = nil, timezone: String? = nil, dueAt: Double? = nil,
                    arm: ExperimentArm? = nil, app: UInt16 = 0, environment: UInt8 = 0) {
            self.token = token; self.location = location; self.recipientId = recipientId; self.payload = payload; self.apnsId = apnsId
            self.headers = headers; self.registeredAt = registeredAt; self.timezone = timezone; self.dueAt = dueAt; self.arm = arm
            self.app = app; self.environment = environment
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
    /// `2026-11-22T02:48:30.423Z` (UTC, milliseconds): the send loop stamps every claim with it.
    static func iso(_ d: Date) -> String { UTCText.milliseconds(d) }

    static func date(_ s: String) -> Date? { UTCText.parse(s) }
}
