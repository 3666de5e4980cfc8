import Foundation
import GRDB
import HeraldCore

/// Counts distinct device tokens in constant memory: the audience prescan's duplicate count.
///
/// A `Set<DeviceToken>` costs about 100 bytes a token (a gigabyte for ten million rows), and the
/// audience must be readable in memory that does not grow with it. Instead each token's bytes go
/// into a SQLite B-tree in a private temporary database: opened with an empty file name, which
/// SQLite creates in the temporary directory and deletes when the connection closes
/// (https://www.sqlite.org/inmemorydb.html#temp_db: "a private, temporary on-disk database …
/// automatically deleted as soon as the database connection is closed"), so nothing is left
/// behind even after a crash. The page cache is capped, so memory stays fixed; the rest is
/// disk (about 40 bytes a distinct token). Nothing here needs durability: no journal, no sync.
public final class DistinctTokens {
    /// Tokens buffered per transaction.
    static let batchSize = 4096
    /// SQLite's page cache for the B-tree, in KiB.
    static let cacheKiB = 8 * 1024

    private let db: DatabaseQueue
    /// Token bytes not yet inserted, back to back; `lengths` says where each ends.
    private var pending: [UInt8] = []
    private var lengths: [Int] = []
    private var inserted = 0

    public init() throws(StateError) {
        do {
            var config = Configuration()
            config.label = "herald.distinct-tokens"
            config.prepareDatabase { db in
                try db.execute(sql: """
                    PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE;
                    PRAGMA cache_size = -\(Self.cacheKiB)
                    """)
            }
            db = try DatabaseQueue(path: "", configuration: config)
            try db.writeWithoutTransaction { db in
                try db.execute(sql: "CREATE TABLE token (bytes BLOB PRIMARY KEY) WITHOUT ROWID")
            }
        } catch {
            throw StateError(path: "(temporary token set)", error)
        }
        pending.reserveCapacity(Self.batchSize * 32)
        lengths.reserveCapacity(Self.batchSize)
    }

    /// Adds a token; repeats are counted once.
    public func insert(_ token: DeviceToken) throws(StateError) {
        Self.appendBytes(ofHex: token.hex, to: &pending)
        lengths.append(pending.count)
        if lengths.count >= Self.batchSize { try flush() }
    }

    /// How many different tokens were inserted.
    public func count() throws(StateError) -> Int {
        try flush()
        return inserted
    }

    private func flush() throws(StateError) {
        guard !lengths.isEmpty else { return }
        do {
            try db.write { db in
                let statement = try db.cachedStatement(sql: "INSERT OR IGNORE INTO token (bytes) VALUES (?)")
                try pending.withUnsafeBufferPointer { all in
                    var start = 0
                    for end in lengths {
                        try statement.execute(arguments: [Data(bytes: all.baseAddress! + start, count: end - start)])
                        inserted += db.changesCount
                        start = end
                    }
                }
            }
        } catch {
            throw StateError(path: "(temporary token set)", error)
        }
        pending.removeAll(keepingCapacity: true)
        lengths.removeAll(keepingCapacity: true)
    }

    /// Canonical tokens are lowercase hex of even length: two digits per byte.
    private static func appendBytes(ofHex hex: String, to out: inout [UInt8]) {
        var high: UInt8 = 0
        var odd = false
        for c in hex.utf8 {
            let v = c <= UInt8(ascii: "9") ? c &- UInt8(ascii: "0") : c &- UInt8(ascii: "a") &+ 10
            if odd { out.append(high << 4 | v) } else { high = v }
            odd.toggle()
        }
    }
}
