import Foundation
import GRDB

/// `herald-shared.sqlite`, beside the campaign state files: what several campaigns sharing a state
/// directory must agree on (the silent-push ledger, the frequency-cap ledger, the suppression list of dead tokens).
///
/// Campaigns run as separate processes, possibly at the same time, so the file is in WAL mode (a
/// rollback journal on a network volume: StateVolume) with a busy timeout, and every write is one
/// short transaction. Created 0600 like the state files.
public final class SharedStore: SQLiteStore, Sendable {
    public static let fileName = "herald-shared.sqlite"

    public let path: String
    let db: DatabaseQueue

    /// The shared store of the state directory that holds `statePath`.
    public convenience init(besideStateFile statePath: String, readOnly: Bool = false, volume: StateVolume = .local) throws(StateError) {
        let dir = (statePath as NSString).deletingLastPathComponent
        try self.init(path: ((dir.isEmpty ? "." : dir) as NSString).appendingPathComponent(Self.fileName), readOnly: readOnly, volume: volume)
    }

    /// `volume`: on a network filesystem the file keeps a rollback journal instead of WAL, so the
    /// campaigns of the directory still take turns at it (StateVolume).
    public init(path: String, readOnly: Bool = false, volume: StateVolume = .local) throws(StateError) {
        self.path = path
        do {
            // Another campaign may hold the write lock for one short transaction.
            db = try SQLiteFile.open(path: path, readOnly: readOnly, missing: "no shared state file yet", journal: volume.sharedJournal,
                                     busyTimeout: 30)
            if !readOnly {
                // Campaigns starting together may both find a migration unapplied (GRDB reads the
                // applied list before the migration's own transaction); the loser's CREATE fails
                // and rolls back, and on the next try it finds the migration recorded.
                for attempt in 1... {
                    do { try SharedSchema.migrator.migrate(db); break } catch where attempt < 5 { continue }
                }
            }
        } catch {
            throw StateError(path: path, error)
        }
    }

    /// Whether the file has every migration of this herald. A file opened read-only is never
    /// migrated: one written by an older herald keeps its old tables until a run opens it.
    public var isCurrent: Bool {
        (try? read { db in try SharedSchema.migrator.hasCompletedMigrations(db) }) ?? false
    }

    /// `body` in one IMMEDIATE transaction: SQLite's write lock is taken before anything is read,
    /// so a check and the insert it allows cannot interleave with another campaign's
    /// (https://sqlite.org/lang_transaction.html, "IMMEDIATE").
    func immediate<T>(_ body: (Database) throws -> T) throws(StateError) -> T {
        do {
            return try db.writeWithoutTransaction { db in
                var result: T?
                try db.inTransaction(.immediate) {
                    result = try body(db)
                    return .commit
                }
                return result!
            }
        } catch {
            throw StateError(path: path, error)
        }
    }
}
