import Foundation
import GRDB
import HeraldCore
@testable import HeraldState
import HeraldTestSupport
import Testing

/// The stores on a network volume (`state.network_filesystem: exclusive`), on a local disk: what
/// SQLite does with the pragmas does not depend on the filesystem under it.
@Suite struct NetworkVolumeStoreTests {
    let dir = TemporaryDirectory("netvol")
    let volume = StateVolume.network(Filesystem(magic: 0x6969))

    private func siblings() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: dir.file("state")).sorted() }

    @Test func theStateFileKeepsItsWALIndexInMemoryAndIsHeldUntilClosed() throws {
        let path = dir.file("state/c.sqlite")
        var store: StateStore? = try StateStore(path: path, volume: volume)
        _ = try store!.openRun(campaign: CampaignName("c"))
        #expect(try store!.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") } == "wal")
        #expect(try store!.read { db in try String.fetchOne(db, sql: "PRAGMA locking_mode") } == "exclusive")
        #expect(!(try siblings()).contains("c.sqlite-shm"))
        // Another connection (a second process gets the same answer from the file's lock) cannot
        // even read it: opening reads the schema, and SQLite says it is locked.
        let error = try #require(throws: DatabaseError.self) { try DatabaseQueue(path: path) }
        #expect(error.resultCode == .SQLITE_BUSY)
        store = nil
        // Closed: the last connection checkpointed and removed its WAL, and the lock is gone.
        #expect(try siblings() == ["c.sqlite"])
        #expect(try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM run") } == 1)
    }

    @Test func aSecondOpenOfAHeldStateFileSaysWhoHoldsItAndWhy() throws {
        let path = dir.file("state/c.sqlite")
        let store = try StateStore(path: path, volume: volume)
        let error = try #require(throws: StateError.self) { try StateStore(path: path, readOnly: true, volume: volume) }
        #expect(error.sqliteCode == 5)
        #expect(error.message.contains("state.network_filesystem: exclusive"))
        withExtendedLifetime(store) {}
    }

    @Test func theSharedFileKeepsARollbackJournalThatCampaignsTakeTurnsAt() throws {
        let a = try SharedStore(besideStateFile: dir.file("state/a.sqlite"), volume: volume)
        let b = try SharedStore(besideStateFile: dir.file("state/b.sqlite"), volume: volume)
        #expect(try a.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") } == "delete")
        #expect(try a.read { db in try String.fetchOne(db, sql: "PRAGMA locking_mode") } == "normal")
        try a.immediate { db in try db.execute(sql: "CREATE TABLE t (x)") }
        try b.immediate { db in try db.execute(sql: "INSERT INTO t VALUES (1)") }
        #expect(try a.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t") } == 1)
        #expect(try siblings() == [SharedStore.fileName])
    }

    @Test func aSharedFileMadeInWALModeLeavesIt() throws {
        let path = dir.file("state/\(SharedStore.fileName)")
        do {
            let local = try SharedStore(path: path)
            try local.immediate { db in try db.execute(sql: "CREATE TABLE t (x)") }
        }
        let shared = try SharedStore(path: path, volume: volume)
        #expect(try shared.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") } == "delete")
        #expect(try shared.read { db in try db.tableExists("t") })
        #expect(try siblings() == [SharedStore.fileName])
    }
}
