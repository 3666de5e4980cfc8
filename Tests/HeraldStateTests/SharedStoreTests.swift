import Foundation
@testable import HeraldState
import GRDB
import HeraldTestSupport
import Testing

@Suite struct SharedStoreTests {
    let dir = TemporaryDirectory("shared")

    @Test func sharedFileSitsBesideTheStateFileAndIsPrivate() throws {
        let store = try SharedStore(besideStateFile: dir.file("state/daily-{date}.sqlite"))
        #expect(store.path == dir.file("state/herald-shared.sqlite"))
        let mode = try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let journal = try store.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(journal == "wal")
        // A second campaign opening the same directory shares the file and migrates nothing twice.
        let other = try SharedStore(besideStateFile: dir.file("state/weekly.sqlite"))
        #expect(try other.read { db in try db.tableExists("shared_meta") })
    }

    @Test func readOnlyOpenOfAMissingFileSaysSo() {
        #expect(throws: StateError.self) { try SharedStore(path: dir.file("none/herald-shared.sqlite"), readOnly: true) }
    }
}
