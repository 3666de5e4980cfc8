import GRDB
import HeraldCore

/// Migrations of `herald-shared.sqlite`. Each feature that keeps cross-campaign data registers
/// its own named migration here; names are never changed once released.
enum SharedSchema {
    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("1-shared-meta") { db in
            try db.execute(sql: "CREATE TABLE shared_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        }
        // The silent-push ledger: one row per background notification admitted by any campaign
        // of the state directory, written before the push leaves (moved into the one ledger by 5).
        m.registerMigration("2-silent-push-ledger") { db in
            try db.execute(sql: """
                CREATE TABLE silent_push (
                    token TEXT NOT NULL,
                    apns_id TEXT NOT NULL,
                    campaign TEXT NOT NULL,
                    sent_at REAL NOT NULL
                );
                CREATE INDEX silent_push_token ON silent_push(token, sent_at);
                CREATE INDEX silent_push_age ON silent_push(sent_at);
                """)
        }
        // Tokens APNs answered 410 (Unregistered, ExpiredToken), per environment and topic (a token is
        // dead for one app in one environment, not everywhere). `invalidated_at` is APNs' timestamp
        // (ms since the epoch), the latest seen; later campaigns skip these tokens unless the
        // audience says the device registered after it.
        m.registerMigration("3-suppression-list") { db in
            try db.execute(sql: """
                CREATE TABLE suppression (
                    environment TEXT NOT NULL,
                    topic TEXT NOT NULL,
                    token TEXT NOT NULL,
                    invalidated_at INTEGER NOT NULL,
                    reason TEXT NOT NULL,
                    campaign TEXT NOT NULL,
                    recorded_at TEXT NOT NULL,
                    PRIMARY KEY (environment, topic, token)
                ) WITHOUT ROWID
                """)
        }
        // Frequency caps (SharedStore+Ledger.swift): one row per push any campaign of a
        // category started, per topic and device token, written before the push leaves.
        // `frequency_window` keeps each category's longest window seen, so a job with a short cap
        // never prunes entries that another job of the category still counts.
        m.registerMigration("4-frequency-cap-ledger") { db in
            try db.execute(sql: """
                CREATE TABLE frequency_push (
                    category TEXT NOT NULL,
                    topic TEXT NOT NULL,
                    token TEXT NOT NULL,
                    apns_id TEXT NOT NULL,
                    campaign TEXT NOT NULL,
                    sent_at REAL NOT NULL
                );
                CREATE INDEX frequency_push_device ON frequency_push(category, topic, token, sent_at);
                CREATE INDEX frequency_push_age ON frequency_push(category, sent_at);
                CREATE TABLE frequency_window (category TEXT PRIMARY KEY, longest REAL NOT NULL);
                """)
        }
        // One ledger for every per-device budget (SharedStore+Ledger.swift): the silent-push
        // budget becomes a cap of its own category over `frequency_push`, counted per token alone
        // (topic ''), and its entries move there, keeping their times, so the budget holds across
        // the upgrade. Its category keeps at least Apple's hour of entries, as before.
        m.registerMigration("5-one-ledger") { db in
            let category = FrequencyCap.silentBudgetCategory
            try db.execute(sql: """
                INSERT INTO frequency_push (category, topic, token, apns_id, campaign, sent_at)
                SELECT ?, '', token, apns_id, campaign, sent_at FROM silent_push
                """, arguments: [category])
            try db.execute(sql: """
                INSERT INTO frequency_window (category, longest) VALUES (?1, ?2)
                ON CONFLICT (category) DO UPDATE SET longest = MAX(longest, ?2)
                """, arguments: [category, Double(FrequencyCap.silentBudgetWindow)])
            try db.execute(sql: "DROP TABLE silent_push")
        }
        // `apns.environment_fallback` (docs/many-apps.md#environment-fallback): the APNs environment
        // that accepted a token after the other answered BadDeviceToken, per topic and token, so
        // later campaigns send it there first. `environment` is `production` or `sandbox`.
        m.registerMigration("6-token-environment") { db in
            try db.execute(sql: """
                CREATE TABLE token_environment (
                    topic TEXT NOT NULL,
                    token TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    campaign TEXT NOT NULL,
                    recorded_at TEXT NOT NULL,
                    PRIMARY KEY (topic, token)
                ) WITHOUT ROWID
                """)
        }
        return m
    }
}
