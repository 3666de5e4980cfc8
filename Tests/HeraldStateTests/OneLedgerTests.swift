import Foundation
import GRDB
import HeraldCore
@testable import HeraldState
import HeraldTestSupport
import Testing

/// The silent-push budget and the frequency caps as caps over one ledger: checked together in one
/// transaction, and a file written by the schema before it migrated in place with its counts.
@Suite struct OneLedgerTests {
    let dir = TemporaryDirectory("one-ledger")
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let silent = FrequencyCap.silentBudget(perDevice: 2, over: .skip)
    let marketing = FrequencyCap(category: "marketing", limits: [.init(max: 2, per: 86_400), .init(max: 5, per: 7 * 86_400)])

    func push(_ token: String, _ id: String) -> LedgerPush { LedgerPush(token: token, apnsId: id) }
    static func token(_ i: Int) -> String { String(format: "%064x", i) }

    /// A background push of a capped campaign: the first budget without room decides, and a push
    /// held back takes no slot under any budget.
    @Test func aPushHeldByOneBudgetTakesNoSlotInAnother() throws {
        let ledger = try SharedStore(path: dir.file("a/herald-shared.sqlite"))
        let daily = FrequencyCap(category: "m", limits: [.init(max: 1, per: 86_400)])
        #expect(try ledger.admit([push("aa", "1")], topic: "t", caps: [silent, daily], campaign: "a", now: t0) == [.admitted])
        #expect(try ledger.pushCount(silent, topic: "t", token: "aa", now: t0) == 1)
        #expect(try ledger.pushCount(daily, topic: "t", token: "aa", now: t0) == 1)
        #expect(try ledger.admit([push("aa", "2")], topic: "t", caps: [silent, daily], campaign: "b", now: t0.addingTimeInterval(60))
                == [.overCap(category: "m", opensAt: t0.addingTimeInterval(86_400))])
        #expect(try ledger.pushCount(silent, topic: "t", token: "aa", now: t0.addingTimeInterval(60)) == 1,
                "the silent budget had room, but the push held by the cap never left: no silent slot")
        // Over the silent budget first: the cap is not consulted and takes nothing.
        let roomy = FrequencyCap(category: "r", limits: [.init(max: 9, per: 86_400)])
        let one = FrequencyCap.silentBudget(perDevice: 1, over: .skip)
        #expect(try ledger.admit([push("aa", "3")], topic: "t", caps: [one, roomy], campaign: "c", now: t0.addingTimeInterval(120))
                == [.overCap(category: FrequencyCap.silentBudgetCategory, opensAt: t0.addingTimeInterval(3600))])
        #expect(try ledger.pushCount(roomy, topic: "t", token: "aa", now: t0.addingTimeInterval(120)) == 0)
    }

    /// The silent-push budget counts per device token, whichever topic the job names (as the
    /// silent-push table always did); a frequency cap counts per topic.
    @Test func theSilentBudgetCountsPerTokenAFrequencyCapPerTopic() throws {
        let ledger = try SharedStore(path: dir.file("t/herald-shared.sqlite"))
        #expect(try ledger.admit([push("aa", "1")], topic: "com.a", caps: [silent, marketing], campaign: "a", now: t0) == [.admitted])
        #expect(try ledger.admit([push("aa", "2")], topic: "com.b", caps: [silent, marketing], campaign: "b", now: t0) == [.admitted])
        #expect(try ledger.admit([push("aa", "3")], topic: "com.c", caps: [silent], campaign: "c", now: t0)
                == [.overCap(category: FrequencyCap.silentBudgetCategory, opensAt: t0.addingTimeInterval(3600))])
        #expect(try ledger.pushCount(marketing, topic: "com.a", token: "aa", now: t0) == 1)
    }

    /// A `herald-shared.sqlite` written by the schema before this one (real runs, dumped: see
    /// SharedStoreV4Fixture) opens, migrates in place, and keeps every count: the silent-push
    /// entries now count under the silent budget, the frequency-cap entries as before, and the
    /// budgets hold against them.
    @Test func aFileOfThePreviousSchemaMigratesInPlaceAndKeepsItsCounts() throws {
        let path = dir.file("v4/herald-shared.sqlite")
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try DatabaseQueue(path: path).writeWithoutTransaction { db in try db.execute(sql: SharedStoreV4Fixture.sql) }
        let then = Date(timeIntervalSince1970: SharedStoreV4Fixture.writtenAt)

        #expect(try SharedStore(path: path, readOnly: true).isCurrent == false, "read-only: never migrated (herald preview)")
        let ledger = try SharedStore(path: path)
        #expect(ledger.isCurrent)
        let tables = try ledger.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") }
        #expect(!tables.contains("silent_push"), "one table: the silent-push entries moved")
        for i in 1...6 {
            #expect(try ledger.pushCount(silent, topic: "com.example.app", token: Self.token(i), now: then) == 2, "token \(i)")
            #expect(try ledger.pushCount(marketing, topic: "com.example.app", token: Self.token(i), now: then) == (i <= 3 ? 2 : 1), "token \(i)")
        }
        let total = try ledger.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM frequency_push") }
        #expect(total == 12 + 9, "12 silent entries and 9 capped ones, none lost, none added")
        // Apple's hour is kept for the silent budget's entries even by a job with a shorter window.
        let kept = try ledger.read { db in
            try Double.fetchOne(db, sql: "SELECT longest FROM frequency_window WHERE category = ?", arguments: [FrequencyCap.silentBudgetCategory])
        }
        #expect(kept == 3600)

        // The budgets hold against the migrated entries: every device has had its 2 background
        // pushes this hour; tokens 1-3 their 2 marketing pushes of the day, tokens 4-6 one.
        let first = try ledger.read { db in
            try Double.fetchOne(db, sql: "SELECT MIN(sent_at) FROM frequency_push WHERE category = ?", arguments: [FrequencyCap.silentBudgetCategory])
        }
        let later = then.addingTimeInterval(60)
        let silentAgain = try ledger.admit((1...6).map { push(Self.token($0), "new-\($0)") }, topic: "com.example.app", caps: [silent],
                                           campaign: "nightly-sync", now: later)
        #expect(silentAgain.allSatisfy { $0 != .admitted && ($0.opensAt?.timeIntervalSince1970 ?? 0) >= (first ?? 0) + 3600 }, "\(silentAgain)")
        let capped = try ledger.admit((1...6).map { push(Self.token($0), "cap-\($0)") }, topic: "com.example.app", caps: [marketing],
                                      campaign: "autumn-sale", now: later)
        #expect(capped.map { $0 == .admitted } == [false, false, false, true, true, true], "\(capped)")

        // Reopening runs no migration again.
        let again = try SharedStore(path: path)
        #expect(try again.pushCount(silent, topic: "com.example.app", token: Self.token(1), now: later) == 2)
    }
}
