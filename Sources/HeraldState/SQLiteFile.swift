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

    /// `missing` is the message when a read-only open finds no file. `pageSize` applies to a new
    /// file only: SQLite fixes it when the file gets its first table, and WAL mode (switched on
    /// below, after it) cannot change it.
    static func open(path: String, readOnly: Bool, missing: String, synchronousFull: Bool = true, cacheKiB: Int? = nil,
                     pageSize: Int? = nil, busyTimeout: TimeInterval) throws -> DatabaseQueue {
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
        config.readonly = readOnly
        config.prepareDatabase { db in
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
        let db = try DatabaseQueue(path: path, configuration: config)
        if !readOnly { try enableWAL(db) }
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
