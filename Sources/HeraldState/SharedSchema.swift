import GRDB

/// Migrations of `herald-shared.sqlite`. Each feature that keeps cross-campaign data registers
/// its own named migration here; names are never changed once released.
enum SharedSchema {
    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("1-shared-meta") { db in
            try db.execute(sql: "CREATE TABLE shared_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        }
        return m
    }
}
