import GRDB

/// The state file's schema, as numbered migrations recorded in the file itself (GRDB's
/// `grdb_migrations` table), so an older state file is upgraded in place, never rebuilt.
enum StateSchema {
    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("1-initial") { db in
            // One row per run of the campaign; `ingested_file`/`ingested_line` is the audience
            // checkpoint: rows at or before it are already recorded.
            try db.execute(sql: """
                CREATE TABLE run (
                    id INTEGER PRIMARY KEY,
                    run_id TEXT NOT NULL,
                    campaign TEXT NOT NULL,
                    started_at TEXT NOT NULL,
                    finished_at TEXT,
                    ingest_complete INTEGER NOT NULL DEFAULT 0,
                    ingested_file INTEGER NOT NULL DEFAULT -1,
                    ingested_line INTEGER NOT NULL DEFAULT 0,
                    rows INTEGER NOT NULL DEFAULT 0,
                    duplicates INTEGER NOT NULL DEFAULT 0
                );
                CREATE TABLE recipient (
                    seq INTEGER PRIMARY KEY,
                    token TEXT NOT NULL UNIQUE,
                    file TEXT NOT NULL,
                    line INTEGER NOT NULL,
                    recipient_id TEXT NOT NULL DEFAULT '',
                    payload BLOB NOT NULL,
                    apns_id TEXT NOT NULL,
                    status TEXT NOT NULL DEFAULT 'pending',
                    http_status INTEGER,
                    reason TEXT NOT NULL DEFAULT '',
                    response_apns_id TEXT,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    run_attempts INTEGER NOT NULL DEFAULT 0,
                    first_attempt_at TEXT,
                    last_attempt_at TEXT,
                    retry_at REAL,
                    invalidated_at INTEGER
                );
                CREATE INDEX recipient_status ON recipient(status, seq);
                CREATE TABLE invalid_row (
                    id INTEGER PRIMARY KEY,
                    file TEXT NOT NULL,
                    line INTEGER NOT NULL,
                    reason TEXT NOT NULL,
                    token_field TEXT NOT NULL,
                    detail TEXT NOT NULL
                );
                """)
        }
        // Several runs per state file: a recurring (`{date}`) campaign or `--new-run` starts a new run
        // of the same job, each with its own recipients. The token's UNIQUE constraint cannot be
        // dropped in place ("SQLite supports a limited subset of ALTER TABLE",
        // https://sqlite.org/lang_altertable.html), so the table is rebuilt, rows kept.
        //
        // Deduplication moves out of the insert path: audience rows are appended to `audience_row`
        // (no index, so each batch commit writes a few sequential pages), and when the audience is
        // fully read one statement keeps each token's first row, in audience order, through an
        // index built by sorting. A unique index on random tokens, maintained row by row, would
        // touch one index page per row in every batch commit.
        //
        // The rendered row stays where it was staged: a recipient points at it (`row`) for its
        // payload and, when the job templates them, its own `priority`, `collapse_id` and
        // `expiration` (NULL: the job's); only duplicates' rows are removed. (`payload` in
        // `recipient` holds what a version-1 file recorded there.) `seen_pass`/`added_pass` tell,
        // after the audience changed under a resumed run, which recipients are new and which vanished.
        // `audience_file` holds each run's input fingerprints.
        m.registerMigration("2-runs-and-audience-fingerprints") { db in
            try db.execute(sql: """
                ALTER TABLE run ADD COLUMN campaign_template TEXT NOT NULL DEFAULT '';
                ALTER TABLE run ADD COLUMN audience_pass INTEGER NOT NULL DEFAULT 1;
                ALTER TABLE run ADD COLUMN new_recipients INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE run ADD COLUMN vanished_recipients INTEGER NOT NULL DEFAULT 0;
                UPDATE run SET campaign_template = campaign;
                ALTER TABLE recipient RENAME TO recipient_v1;
                CREATE TABLE recipient (
                    seq INTEGER PRIMARY KEY,
                    run INTEGER NOT NULL,
                    token TEXT NOT NULL,
                    file TEXT NOT NULL,
                    line INTEGER NOT NULL,
                    recipient_id TEXT NOT NULL DEFAULT '',
                    row INTEGER,
                    payload BLOB,
                    apns_id TEXT NOT NULL,
                    status TEXT NOT NULL DEFAULT 'pending',
                    http_status INTEGER,
                    reason TEXT NOT NULL DEFAULT '',
                    response_apns_id TEXT,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    run_attempts INTEGER NOT NULL DEFAULT 0,
                    first_attempt_at TEXT,
                    last_attempt_at TEXT,
                    retry_at REAL,
                    invalidated_at INTEGER,
                    seen_pass INTEGER NOT NULL DEFAULT 1,
                    added_pass INTEGER NOT NULL DEFAULT 1
                );
                INSERT INTO recipient (seq, run, token, file, line, recipient_id, payload, apns_id, status, http_status, reason,
                                       response_apns_id, attempts, run_attempts, first_attempt_at, last_attempt_at, retry_at, invalidated_at)
                    SELECT seq, COALESCE((SELECT MAX(id) FROM run), 1), token, file, line, recipient_id, payload, apns_id, status,
                           http_status, reason, response_apns_id, attempts, run_attempts, first_attempt_at, last_attempt_at,
                           retry_at, invalidated_at FROM recipient_v1;
                DROP TABLE recipient_v1;
                CREATE INDEX recipient_status ON recipient(run, status, seq);
                ALTER TABLE invalid_row ADD COLUMN run INTEGER NOT NULL DEFAULT 0;
                UPDATE invalid_row SET run = COALESCE((SELECT MAX(id) FROM run), 1);
                CREATE INDEX invalid_row_run ON invalid_row(run, id);
                CREATE TABLE audience_row (
                    id INTEGER PRIMARY KEY,
                    run INTEGER NOT NULL,
                    pass INTEGER NOT NULL,
                    token TEXT NOT NULL,
                    file TEXT NOT NULL,
                    line INTEGER NOT NULL,
                    recipient_id TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    apns_id TEXT NOT NULL,
                    priority INTEGER,
                    collapse_id TEXT,
                    expiration TEXT
                );
                CREATE TABLE audience_file (
                    run INTEGER NOT NULL,
                    idx INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    path TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    mtime REAL NOT NULL,
                    sha256 TEXT NOT NULL,
                    PRIMARY KEY (run, idx)
                );
                """)
        }
        // Reports: per recipient the development-only `apns-unique-id` and the last
        // attempt's latency; per staged row the audience's `registered_at` (ms since the epoch), which
        // the suppression list compares with a 410's timestamp; per run what the recipient rows cannot
        // give back (time spent sending over all invocations, the sending stage's counters, the last
        // exit code) so a regenerated summary matches the one the run wrote, and whether the
        // suppression list was applied before the first push.
        m.registerMigration("3-report-columns") { db in
            try db.execute(sql: """
                ALTER TABLE recipient ADD COLUMN apns_unique_id TEXT;
                ALTER TABLE recipient ADD COLUMN latency_ms INTEGER;
                ALTER TABLE audience_row ADD COLUMN registered_at INTEGER;
                ALTER TABLE run ADD COLUMN active_seconds REAL NOT NULL DEFAULT 0;
                ALTER TABLE run ADD COLUMN connections_opened INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE run ADD COLUMN jwts_signed INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE run ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE run ADD COLUMN throttle_deferrals INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE run ADD COLUMN last_exit_code INTEGER;
                ALTER TABLE run ADD COLUMN suppression_checked INTEGER NOT NULL DEFAULT 0;
                """)
        }
        // Claiming by high-water mark (`claimed_through`): the streaming sender claims pending
        // recipients in audience order, so "claimed and not yet answered" is "pending, with a seq at
        // or below the mark". One number per claim is committed instead of one `inflight` UPDATE per
        // recipient, which would move each row in the status index once more per send. An attempt
        // is counted when its answer is recorded, or when a crash left its outcome unknown
        // (`recoverInflight`). Rows a version-3 run left `inflight` had their attempt counted when
        // claimed: they become pending, as that version's resume did.
        m.registerMigration("4-claim-watermark") { db in
            try db.execute(sql: """
                ALTER TABLE run ADD COLUMN claimed_through INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE run ADD COLUMN claimed_at TEXT;
                UPDATE recipient SET status = 'pending' WHERE status = 'inflight';
                """)
        }
        // The status index without the two statuses nearly every row has (`RunState.flagged`, a
        // partial index: https://sqlite.org/partialindex.html). With them indexed, recording a
        // `sent` answer moves its row from the index's pending range to its sent range, two B-tree
        // changes per push. Pending and sent rows are found by the run's range of seqs instead
        // (`recipient_run`, which recording never changes); the index keeps what queries look for
        // by status: retries, rows in flight, failures, and the few other final statuses.
        m.registerMigration("5-flagged-status-index") { db in
            try db.execute(sql: """
                DROP INDEX recipient_status;
                CREATE INDEX recipient_flagged ON recipient(run, status, seq) WHERE \(RunState.flagged);
                CREATE INDEX recipient_run ON recipient(run);
                """)
        }
        // Delivery events (`events` in the job): one row per recipient outcome, written by a
        // trigger in the transaction that records the outcome (`StateStore.captureEvents`), and
        // deleted once every configured sink has it. AUTOINCREMENT: an id is never used twice in
        // the file ("prevent the reuse of ROWIDs from previously deleted rows",
        // https://sqlite.org/autoinc.html), so `<run_id>.<id>` names one event for good and a
        // receiver can deduplicate by it. The outcome's columns are copied (a later change to the
        // recipient must not rewrite an event already recorded); the token, ids and campaign are
        // read from the recipient and run rows, which never change.
        // `event_sink`: how far each sink (`url`, `file`) has delivered, and how many in all.
        m.registerMigration("6-event-outbox") { db in
            try db.execute(sql: """
                CREATE TABLE event_outbox (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    recipient INTEGER NOT NULL,
                    status TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    http_status INTEGER,
                    invalidated_at INTEGER,
                    at TEXT NOT NULL
                );
                CREATE TABLE event_sink (
                    sink TEXT PRIMARY KEY,
                    delivered_through INTEGER NOT NULL DEFAULT 0,
                    delivered INTEGER NOT NULL DEFAULT 0
                );
                """)
        }
        // Delivery policy (`schedule`): each staged row's and recipient's time zone as the audience
        // wrote it and its due time (UNIX seconds, computed once when the row is recorded; +Inf: no
        // window opens). A recipient that is not due when it is made waits as `scheduled`, with its
        // due time in `retry_at`, and is claimed through `recipient_due` in due order, as its zone's
        // window opens: the high-water mark claims only in audience order.
        m.registerMigration("7-due-times") { db in
            try db.execute(sql: """
                ALTER TABLE audience_row ADD COLUMN timezone TEXT;
                ALTER TABLE audience_row ADD COLUMN due_at REAL;
                ALTER TABLE recipient ADD COLUMN timezone TEXT;
                ALTER TABLE recipient ADD COLUMN due_at REAL;
                CREATE INDEX recipient_due ON recipient(run, retry_at, seq) WHERE status = 'scheduled';
                """)
        }
        // Broadcast campaigns (`push.broadcast`): the run's recipients are channels, whose ids take
        // the token column's place; reports write them as `channel_id`.
        m.registerMigration("8-broadcast-runs") { db in
            try db.execute(sql: "ALTER TABLE run ADD COLUMN broadcast INTEGER NOT NULL DEFAULT 0")
        }
        // Staged payloads kept as differences from a reference payload of the same run
        // (`PayloadReference`): a staged row whose `payload_reference` is set holds its payload in
        // that encoded form; NULL, as every row before this migration, holds it as it is. A run's
        // references go when its staged rows do (`RunState.finish`). AUTOINCREMENT: a reference's
        // id is never used again in the file, so a claim may keep the bytes it read for an id.
        m.registerMigration("9-payload-references") { db in
            try db.execute(sql: """
                CREATE TABLE payload_reference (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    run INTEGER NOT NULL,
                    bytes BLOB NOT NULL
                );
                CREATE INDEX payload_reference_run ON payload_reference(run);
                ALTER TABLE audience_row ADD COLUMN payload_reference INTEGER;
                """)
        }
        // Operators' holds on the campaign (CampaignControl.swift): `campaign_control` is the one
        // hold in force (paused or cancelled), written in its own transaction by `herald pause`
        // and `herald cancel` and read by the running process; `control_log` keeps every command.
        m.registerMigration("10-campaign-control") { db in
            try db.execute(sql: """
                CREATE TABLE campaign_control (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    action TEXT NOT NULL,
                    by TEXT NOT NULL,
                    at TEXT NOT NULL,
                    reason TEXT NOT NULL
                );
                CREATE TABLE control_log (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    action TEXT NOT NULL,
                    by TEXT NOT NULL,
                    at TEXT NOT NULL,
                    reason TEXT NOT NULL
                );
                """)
        }
        // Experiments (`experiment` in the job, docs/experiments.md): whether the run has one, the
        // variant each payload reference was made for (each variant's payloads are kept against
        // its own), and each staged row's and
        // recipient's `variant` (a variant's name, `holdout`, or NULL: no experiment, or waiting
        // for the winner) and `rollout` (1: outside the test, for the winner). A row waiting for a
        // winner not chosen yet keeps every variant's payload and headers in `variant_payload`,
        // so the winner's can take the staged row's place once it is chosen (`releaseWinner`);
        // its own `payload` is then empty. Those payloads are kept as the staged rows' are: against
        // a reference (`payload_reference`, NULL: as they are).
        m.registerMigration("11-experiments") { db in
            try db.execute(sql: """
                ALTER TABLE run ADD COLUMN experiment INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE payload_reference ADD COLUMN variant TEXT;
                ALTER TABLE audience_row ADD COLUMN variant TEXT;
                ALTER TABLE audience_row ADD COLUMN rollout INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE recipient ADD COLUMN variant TEXT;
                ALTER TABLE recipient ADD COLUMN rollout INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE variant_payload (
                    row INTEGER NOT NULL,
                    variant TEXT NOT NULL,
                    run INTEGER NOT NULL,
                    payload BLOB NOT NULL,
                    priority INTEGER,
                    collapse_id TEXT,
                    expiration TEXT,
                    payload_reference INTEGER,
                    PRIMARY KEY (row, variant)
                ) WITHOUT ROWID;
                """)
        }
        // Many apps in one campaign (docs/many-apps.md): `run_app` numbers the apps a run's rows
        // belong to (by name, so a job that reorders `apns.apps` finds its apps again), and each
        // staged row and recipient keeps its app (that number), environment (production or
        // sandbox) and fallback (moved to the other environment once after BadDeviceToken,
        // `apns.environment_fallback`, never again) in `route` (`StoredRoute`). `run.routed`: the
        // run's reports and events say which app and environment. A job without `apns.apps` has
        // one app, 0, named "".
        m.registerMigration("12-apps") { db in
            try db.execute(sql: """
                ALTER TABLE run ADD COLUMN routed INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE run_app (
                    run INTEGER NOT NULL,
                    app INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    topic TEXT NOT NULL,
                    PRIMARY KEY (run, app)
                ) WITHOUT ROWID;
                ALTER TABLE audience_row ADD COLUMN route INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE recipient ADD COLUMN route INTEGER NOT NULL DEFAULT 0;
                """)
        }
        // A file that took `12-apps` in its first form has three columns instead of `route`
        // (`app`, `environment`, `fallback`; one less in audience_row): they become `route`. One
        // column, not three: SQLite rewrites a recipient's whole record on every answer and decodes
        // each column to do it, so each column costs every run, one app or many. A file that took
        // 12 as it is now has nothing to do here (and a new file skips the costly DROP COLUMNs,
        // each a rewrite of the table and a check of the whole schema). SQLite's shifts and bitwise
        // operators share one precedence, left to right: hence the parentheses.
        m.registerMigration("13-route") { db in
            guard try db.columns(in: "recipient").contains(where: { $0.name == "app" }) else { return }
            try db.execute(sql: """
                ALTER TABLE audience_row ADD COLUMN route INTEGER NOT NULL DEFAULT 0;
                UPDATE audience_row SET route = (app << 2) | environment WHERE app != 0 OR environment != 0;
                ALTER TABLE audience_row DROP COLUMN app;
                ALTER TABLE audience_row DROP COLUMN environment;
                ALTER TABLE recipient ADD COLUMN route INTEGER NOT NULL DEFAULT 0;
                UPDATE recipient SET route = (app << 2) | (fallback << 1) | environment WHERE app != 0 OR environment != 0 OR fallback != 0;
                ALTER TABLE recipient DROP COLUMN app;
                ALTER TABLE recipient DROP COLUMN environment;
                ALTER TABLE recipient DROP COLUMN fallback;
                """)
        }
        return m
    }
}
