import Foundation
import HeraldCore
@testable import HeraldState
import GRDB
import HeraldTestSupport
import Testing

/// Recipients with a due time (`schedule`): made `scheduled` until it comes, claimed in due order
/// as it does, `throttled` (`window_missed`) when it never comes; the same rule whether the
/// audience is read first or while sending.
@Suite struct DueTimeStateTests {
    let dir = TemporaryDirectory("due")

    func token(_ i: Int) -> DeviceToken { try! DeviceToken.normalize(String(format: "%064x", i)).get() }

    /// Rows 1…n; row i is due at `due(i)` (nil: no due time).
    func batch(_ n: Int, due: (Int) -> Double?) -> IngestBatch {
        var b = IngestBatch()
        b.recipients = (1...n).map { i in
            IngestBatch.Recipient(token: token(i), location: RowLocation(file: "a.csv", line: i + 1), recipientId: "u\(i)",
                                  payload: Array("{}".utf8), apnsId: "id-\(i)", timezone: i % 2 == 0 ? "Europe/Paris" : "+05:30",
                                  dueAt: due(i))
        }
        b.rows = n
        return b
    }

    func statuses(_ store: StateStore) throws -> [String: String] {
        try store.read { db in
            var out: [String: String] = [:]
            for row in try GRDBRow.all(db, "SELECT token, status || '/' || reason || '/' || COALESCE(timezone, '-') AS s FROM recipient") {
                out[row.0] = row.1
            }
            return out
        }
    }

    @Test func dueLaterWaitsAndIsClaimedInDueOrder() throws {
        let store = try StateStore(path: dir.file("read-first.sqlite"))
        try store.captureEvents()
        let run = store.run(try store.openRun(campaign: CampaignName("c")))
        let now = Date().timeIntervalSince1970
        // 1: no due time; 2: due already; 3: in 100 s; 4: in 50 s; 5: never.
        let due: [Int: Double] = [2: now - 10, 3: now + 100, 4: now + 50, 5: .infinity]
        try run.ingest(batch(5) { due[$0] })
        try run.markIngestComplete()
        let s = try statuses(store)
        #expect(s[token(1).hex] == "pending//+05:30" && s[token(2).hex] == "pending//Europe/Paris")
        #expect(s[token(3).hex] == "scheduled//+05:30" && s[token(4).hex] == "scheduled//Europe/Paris")
        #expect(s[token(5).hex] == "throttled/window_missed/+05:30")
        #expect(try run.openCount() == 4 && run.scheduledCount() == 2)
        #expect(try run.nextDueTime()?.timeIntervalSince1970 == now + 50)
        #expect(try store.events(after: 0, limit: 10).map(\.reason) == ["window_missed"], "a final start has its event")

        #expect(try run.claim(limit: 10, maxAttempts: 3).map(\.token) == [token(1), token(2)], "only what is due")
        let later = Date(timeIntervalSince1970: now + 200)
        #expect(try run.claim(limit: 10, maxAttempts: 3, now: later).map(\.token) == [token(4), token(3)], "earliest due first")
        #expect(try run.scheduledCount() == 0 && run.nextDueTime() == nil)
        // Claimed scheduled recipients are in flight like retries: a crash puts them back.
        try run.recoverInflight()
        #expect(try run.openCount() == 4)
    }

    @Test func theSuppressionListReachesScheduledRecipients() throws {
        let store = try StateStore(path: dir.file("suppress.sqlite"))
        let run = store.run(try store.openRun(campaign: CampaignName("c")))
        try run.ingest(batch(2) { _ in Date().timeIntervalSince1970 + 3600 })
        try run.markIngestComplete()
        let candidates = try run.suppressionCandidates(after: 0, limit: 10)
        #expect(candidates.count == 2)
        try run.suppress([(seq: candidates[0].seq, invalidatedAt: 7)])
        #expect(try statuses(store)[token(1).hex] == "suppressed/suppression_list/+05:30")
        #expect(try run.scheduledCount() == 1)
    }

    @Test func readingWhileSendingStartsRecipientsTheSameWay() throws {
        let store = try StateStore(path: dir.file("streaming.sqlite"))
        let run = store.run(try store.openRun(campaign: CampaignName("c")))
        _ = try run.prepareSendWhileReading()
        let now = Date().timeIntervalSince1970
        let due: [Int: Double] = [2: now + 100, 3: .infinity]
        _ = try run.ingestWhileSending(batch(4) { due[$0] }, suppressed: [SuppressedKey(app: 0, token: token(4).hex): 9])
        let s = try statuses(store)
        #expect(s[token(1).hex] == "pending//+05:30" && s[token(2).hex] == "scheduled//Europe/Paris")
        #expect(s[token(3).hex] == "throttled/window_missed/+05:30" && s[token(4).hex] == "suppressed/suppression_list/Europe/Paris")
        #expect(try run.nextDueTime()?.timeIntervalSince1970 == now + 100)
    }
}

/// Rows of a two-column query, as (text, text).
enum GRDBRow {
    static func all(_ db: GRDB.Database, _ sql: String) throws -> [(String, String)] {
        try GRDB.Row.fetchAll(db, sql: sql).map { ($0[0], $0[1]) }
    }
}
