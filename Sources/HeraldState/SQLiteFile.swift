import Foundation
import GRDB
import Synchronization

/// How herald opens its SQLite files (a campaign's state file, the shared file beside them): the
/// file is created 0600 before SQLite opens it (SQLite gives -wal and -shm the same mode), WAL
/// journal, `synchronous=FULL` unless asked otherwise. Each store runs its own migrations after.
enum SQLiteFile {
    /// Tests only: told every statement SQLite prepares on a file opened while it is set, so the
    /// plan audit (HeraldStateTests) can ask SQLite how each one finds its rows.
    static let statementObserver = Mutex<(@Sendable (_ path: String, _ sql: String) -> Void)?>(nil)

    /// How a file keeps its journal and its locks (StateVolume picks one per file).
    enum Journal: Sendable {
        /// WAL with its index in the shared-memory file beside it (`-shm`): readers in other
        /// processes of the same host read beside a writer.
        case wal
        /// WAL with `locking_mode=EXCLUSIVE` set before the file is first read: "If EXCLUSIVE
        /// locking mode is set prior to the first WAL-mode database access, then SQLite never
        /// attempts to call any of the shared-memory methods and hence no shared-memory wal-index
        /// is ever created. In that case, the database connection remains in EXCLUSIVE mode as
        /// long as the journal mode is WAL" (https://www.sqlite.org/wal.html#noshm). The one
        /// connection holds the file's lock until it closes: no other process reads or writes it.
        case walExclusive
        /// A rollback journal (`journal_mode=DELETE`) with normal locking, for a file several
        /// processes write in turn on a network filesystem: it needs only the filesystem's POSIX
        /// locks, not shared memory (https://www.sqlite.org/useovernet.html).
        case rollback
    }

    /// `missing` is the message when a read-only open finds no file. `pageSize` applies to a new
    /// file only: SQLite fixes it when the file gets its first table, and WAL mode (switched on
    /// below, after it) cannot change it.
    ///
    /// `readOnly` with a journal other than `.wal` still opens the file for writing, without
    /// creating it: taking the exclusive lock, or leaving WAL mode, writes to it.
    static func open(path: String, readOnly: Bool, missing: String, journal: Journal = .wal, synchronousFull: Bool = true,
                     cacheKiB: Int? = nil, pageSize: Int? = nil, busyTimeout: TimeInterval) throws -> DatabaseQueue {
        if readOnly {
            guard FileManager.default.fileExists(atPath: path) else { throw StateError(path: path, message: missing) }
        } else {
            let dir = (path as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: dir.isEmpty ? "." : dir, withIntermediateDirectories: true)
            if !FileManager.default.fileExists(atPath: path) {
                let fd = Foundation.open(path, O_CREAT | O_WRONLY, 0o600)
                guard fd >= 0 else { throw StateError(path: path, message: "cannot create: \(String(cString: strerror(errno)))") }
                close(fd)
            }
        }
        var config = Configuration()
        config.readonly = readOnly && journal == .wal
        config.prepareDatabase { db in
            // Before anything reads the file: a WAL file read in normal locking mode gets its -shm.
            if journal != .wal { try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE") }
            try db.execute(sql: synchronousFull ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
            if let pageSize, !readOnly { try db.execute(sql: "PRAGMA page_size = \(pageSize)") }
            if let cacheKiB { try db.execute(sql: "PRAGMA cache_size = -\(cacheKiB)") }
            if let observe = statementObserver.withLock({ $0 }) {
                db.trace(options: .statement) { event in
                    if case .statement(let statement) = event { observe(path, statement.sql) }
                }
            }
        }
        config.busyMode = .timeout(busyTimeout)
        let db: DatabaseQueue
        do {
            // Opening reads the file (GRDB checks it is a database), which takes the exclusive lock.
            db = try DatabaseQueue(path: path, configuration: config)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY && journal == .walExclusive {
            throw StateError(path: path, message: "another process has this file open: with state.network_filesystem: exclusive a "
                             + "herald run holds its state file for as long as it runs, and herald status and herald report read it "
                             + "only between runs", sqliteCode: error.resultCode.primaryResultCode.rawValue)
        }
        switch journal {
        case .wal, .walExclusive:
            if !readOnly { try enableWAL(db) }
        case .rollback:
            // Leaving WAL (a file made before the directory was on this volume) checkpoints it
            // under the exclusive lock, without a -shm; then back to normal locking, released on
            // the next read (https://sqlite.org/pragma.html#pragma_locking_mode).
            try db.writeWithoutTransaction { db in
                _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = DELETE")
                _ = try String.fetchOne(db, sql: "PRAGMA locking_mode = NORMAL")
                _ = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sqlite_master")
            }
        }
        return db
    }

    /// Switching a new file to WAL needs an exclusive lock, and SQLite answers SQLITE_BUSY at once
    /// (no busy handler) when another process opening the same new file holds it: two campaigns
    /// starting together on a new herald-shared.sqlite. The other one is switching it too, so a
    /// short wait and a retry finds it in WAL already.
    private static func enableWAL(_ db: DatabaseQueue) throws {
        for attempt in 1... {
            do {
                _ = try db.writeWithoutTransaction { db in try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
                return
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY && attempt < 100 {
                usleep(50_000)
            }
        }
    }
}

/// A store over one SQLite file: every read and write maps SQLite's errors to `StateError`
/// naming the file.
protocol SQLiteStore {
    var path: String { get }
    var db: DatabaseQueue { get }
}

extension SQLiteStore {
    func write<T>(_ body: (Database) throws -> T) throws(StateError) -> T {
        do { return try db.write(body) } catch { throw StateError(path: path, error) }
    }

    func read<T>(_ body: (Database) throws -> T) throws(StateError) -> T {
        do { return try db.read(body) } catch { throw StateError(path: path, error) }
    }
}
