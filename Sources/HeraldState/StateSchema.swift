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
        return m
    }
}
