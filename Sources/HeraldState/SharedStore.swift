import Foundation
import GRDB

/// `herald-shared.sqlite`, beside the campaign state files: what several campaigns sharing a state
/// directory must agree on (the silent-push ledger, the suppression list of dead tokens).
///
/// Campaigns run as separate processes, possibly at the same time, so the file is in WAL mode with
/// a busy timeout, and every write is one short transaction. Created 0600 like the state files.
public final class SharedStore: Sendable {
    public static let fileName = "herald-shared.sqlite"

    public let path: String
    let db: DatabaseQueue

    /// The shared store of the state directory that holds `statePath`.
    public convenience init(besideStateFile statePath: String, readOnly: Bool = false) throws(StateError) {
        let dir = (statePath as NSString).deletingLastPathComponent
        try self.init(path: ((dir.isEmpty ? "." : dir) as NSString).appendingPathComponent(Self.fileName), readOnly: readOnly)
    }

    public init(path: String, readOnly: Bool = false) throws(StateError) {
        self.path = path
        do {
            if readOnly {
                guard FileManager.default.fileExists(atPath: path) else {
                    throw StateError(path: path, message: "no shared state file yet")
                }
            } else {
                let dir = (path as NSString).deletingLastPathComponent
                try FileManager.default.createDirectory(atPath: dir.isEmpty ? "." : dir, withIntermediateDirectories: true)
                if !FileManager.default.fileExists(atPath: path) {
                    let fd = open(path, O_CREAT | O_WRONLY, 0o600)
                    guard fd >= 0 else { throw StateError(path: path, message: "cannot create: \(String(cString: strerror(errno)))") }
                    close(fd)
                }
            }
            var config = Configuration()
            config.readonly = readOnly
            config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            // Another campaign may hold the write lock for one short transaction.
            config.busyMode = .timeout(30)
            db = try DatabaseQueue(path: path, configuration: config)
            if !readOnly {
                _ = try db.writeWithoutTransaction { db in try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
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

    func write<T>(_ body: (Database) throws -> T) throws(StateError) -> T {
        do { return try db.write(body) } catch { throw StateError(path: path, error) }
    }

    func read<T>(_ body: (Database) throws -> T) throws(StateError) -> T {
        do { return try db.read(body) } catch { throw StateError(path: path, error) }
    }
}
