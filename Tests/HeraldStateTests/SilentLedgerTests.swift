import Foundation
@testable import HeraldState
import GRDB
import HeraldCore
import HeraldTestSupport
import Testing

/// The silent-push ledger in a real herald-shared.sqlite.
@Suite struct SilentLedgerTests {
    let dir = TemporaryDirectory("ledger")
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func push(_ token: String, _ id: String) -> LedgerPush { LedgerPush(token: token, apnsId: id) }
    func overBudget(opensAt: Date) -> LedgerDecision { .overCap(category: FrequencyCap.silentBudgetCategory, opensAt: opensAt) }

    @Test func eachDeviceGetsItsBudgetPerWindowAndLearnsWhenItOpensAgain() throws {
        let ledger = try SharedStore(path: dir.file("s/herald-shared.sqlite"))
        #expect(try ledger.admitSilent([push("aa", "1"), push("bb", "2")], campaign: "a", limit: 2, now: t0) == [.admitted, .admitted])
        #expect(try ledger.admitSilent([push("aa", "3")], campaign: "b", limit: 2, now: t0.addingTimeInterval(600)) == [.admitted])
        let over = try ledger.admitSilent([push("aa", "4"), push("bb", "5")], campaign: "c", limit: 2, now: t0.addingTimeInterval(1200))
        #expect(over == [overBudget(opensAt: t0.addingTimeInterval(3600)), .admitted], "aa has had 2 this hour; bb 1")
        #expect(try ledger.silentPushCount(token: "aa", now: t0.addingTimeInterval(1200)) == 2, "the refused push is not recorded")
        // At the hour the first entry leaves the window: one slot again, then none until the second leaves.
        #expect(try ledger.admitSilent([push("aa", "4")], campaign: "c", limit: 2, now: t0.addingTimeInterval(3600)) == [.admitted])
        #expect(try ledger.admitSilent([push("aa", "6")], campaign: "d", limit: 2, now: t0.addingTimeInterval(3700))
                == [overBudget(opensAt: t0.addingTimeInterval(4200))])
    }

    @Test func aResendOfTheSameNotificationReusesItsEntry() throws {
        let ledger = try SharedStore(path: dir.file("r/herald-shared.sqlite"))
        #expect(try ledger.admitSilent([push("aa", "x")], campaign: "a", limit: 1, now: t0) == [.admitted])
        // Outcome unknown (crash, lost connection) or 5xx: the same apns-id again within the window.
        #expect(try ledger.admitSilent([push("aa", "x")], campaign: "a", limit: 1, now: t0.addingTimeInterval(30)) == [.admitted])
        #expect(try ledger.silentPushCount(token: "aa", now: t0.addingTimeInterval(30)) == 1)
        #expect(try ledger.admitSilent([push("aa", "y")], campaign: "b", limit: 1, now: t0.addingTimeInterval(60)) != [.admitted])
    }

    @Test func limitZeroAdmitsEverythingButStillRecordsIt() throws {
        let ledger = try SharedStore(path: dir.file("z/herald-shared.sqlite"))
        for i in 0..<5 { #expect(try ledger.admitSilent([push("aa", "\(i)")], campaign: "free", limit: 0, now: t0) == [.admitted]) }
        #expect(try ledger.admitSilent([push("aa", "x")], campaign: "strict", limit: 2, now: t0) != [.admitted],
                "a campaign with a budget counts pushes of a campaign without one")
    }

    @Test func entriesOlderThanAnyWindowArePruned() throws {
        let ledger = try SharedStore(path: dir.file("p/herald-shared.sqlite"))
        _ = try ledger.admitSilent([push("aa", "1"), push("bb", "2")], campaign: "a", limit: 2, now: t0)
        _ = try ledger.admitSilent([push("cc", "3")], campaign: "a", limit: 2, now: t0.addingTimeInterval(3601))
        #expect(try ledger.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM frequency_push") } == 1)
    }

    /// Separate connections to one file, as separate herald processes have: the check and the
    /// insert are one IMMEDIATE transaction, so racing campaigns never exceed the budget together.
    @Test func concurrentCampaignsNeverExceedTheBudgetTogether() async throws {
        let path = dir.file("c/herald-shared.sqlite")
        _ = try SharedStore(path: path)
        let tokens = (0..<20).map { String(format: "%064x", $0) }
        let admitted = try await withThrowingTaskGroup(of: Int.self) { group in
            for campaign in 0..<4 {
                group.addTask {
                    let ledger = try SharedStore(path: path)
                    var n = 0
                    for round in 0..<20 {
                        let batch = tokens.map { LedgerPush(token: $0, apnsId: "\(campaign)-\(round)-\($0)") }
                        n += try ledger.admitSilent(batch, campaign: "c\(campaign)", limit: 2, now: Date())
                            .filter { $0 == .admitted }.count
                    }
                    return n
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(admitted == tokens.count * 2, "4 campaigns × 5 rounds asked for 20 tokens; each got exactly 2")
        let ledger = try SharedStore(path: path)
        for t in tokens { #expect(try ledger.silentPushCount(token: t) == 2) }
    }

    @Test func theLedgerMigrationIsRecordedByName() throws {
        let ledger = try SharedStore(path: dir.file("m/herald-shared.sqlite"))
        let names = try ledger.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations") }
        #expect(names.contains("2-silent-push-ledger") && names.contains("5-one-ledger"))
    }
}

@Suite struct SharedStoreOpeningTests {
    let dir = TemporaryDirectory("shared-open")

    /// Campaigns started by the same cron minute open a new shared file together: each one
    /// migrates it or finds it migrated, none fails.
    @Test func manyCampaignsOpeningANewSharedFileAtOnceAllSucceed() async throws {
        for round in 0..<20 {
            let path = dir.file("r\(round)/herald-shared.sqlite")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<6 { group.addTask { _ = try SharedStore(path: path) } }
                try await group.waitForAll()
            }
        }
    }
}

/// The silent-push budget alone, as SendGate asks the ledger for a background push.
extension SharedStore {
    func admitSilent(_ pushes: [LedgerPush], campaign: String, limit: Int, window: Int = FrequencyCap.silentBudgetWindow,
                     now: Date) throws -> [LedgerDecision] {
        try admit(pushes, topic: "com.example.app", caps: [.silentBudget(perDevice: limit, window: window, over: .skip)], campaign: campaign, now: now)
    }

    func silentPushCount(token: String, now: Date = Date()) throws -> Int {
        try pushCount(.silentBudget(perDevice: 1, over: .skip), topic: "com.example.app", token: token, now: now)
    }
}
