import Foundation
import HeraldCore
@testable import HeraldState
import GRDB
import HeraldTestSupport
import Testing

/// The state the reports need: migration 3 on fresh and upgraded files, per-recipient latency and
/// apns-unique-id, per-run counters, and the suppression list in herald-shared.sqlite.
@Suite struct ReportStateTests {
    let dir = TemporaryDirectory("report-state")

    func token(_ i: Int) -> DeviceToken { try! DeviceToken.normalize(String(format: "%064x", i)).get() }

    func recipient(_ i: Int, registeredAt: Int64? = nil) -> IngestBatch.Recipient {
        IngestBatch.Recipient(token: token(i), location: RowLocation(file: "a.csv", line: i + 1), recipientId: "u\(i)",
                              payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8), apnsId: "00000000-0000-5000-8000-\(String(format: "%012x", i))",
                              registeredAt: registeredAt)
    }

    func ingested(_ s: StateStore, _ ids: [Int], registeredAt: [Int: Int64] = [:]) throws -> RunState {
        let run = try s.openRun(campaign: CampaignName("c"))
        var b = IngestBatch()
        b.recipients = ids.map { recipient($0, registeredAt: registeredAt[$0]) }
        b.rows = ids.count
        try s.run(run).ingest(b)
        try s.run(run).markIngestComplete()
        return s.run(run)
    }

    @Test func aVersion2StateFileIsUpgradedInPlaceAndKeepsItsRecipients() throws {
        let path = dir.file("old.sqlite")
        // A state file as herald wrote it before the reports migration.
        let queue = try DatabaseQueue(path: path)
        try StateSchema.migrator.migrate(queue, upTo: "2-runs-and-audience-fingerprints")
        try queue.write { db in
            try db.execute(sql: "INSERT INTO run (run_id, campaign, campaign_template, started_at, ingest_complete) VALUES ('r1', 'c', 'c', '2026-01-01T00:00:00.000Z', 1)")
            try db.execute(sql: "INSERT INTO recipient (run, token, file, line, payload, apns_id, status, http_status) VALUES (1, ?, 'a.csv', 2, X'7B7D', 'id-1', 'sent', 200)",
                           arguments: [token(1).hex])
        }
        try queue.close()
        let s = try StateStore(path: path)
        let run = s.run(try s.openRun(campaign: CampaignName("c")))
        var rows: [DeliveryRow] = []
        try run.forEachDelivery { rows.append($0) }
        #expect(rows.count == 1 && rows[0].status == .sent && rows[0].latencyMs == nil && rows[0].apnsUniqueId == nil)
        #expect(try run.figures() == RunFigures())
        #expect(try !run.suppressionChecked())
    }

    @Test func outcomesKeepLatencyAndUniqueIdAndCountersAddUpOverInvocations() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try ingested(s, [1, 2])
        let claimed = try run.claim(limit: 10)
        try run.record([
            AttemptOutcome(seq: claimed[0].seq, status: .sent, httpStatus: 200, responseApnsId: claimed[0].apnsId,
                           apnsUniqueId: "u-1", latencyMs: 42),
            AttemptOutcome(seq: claimed[1].seq, status: .retry, httpStatus: 503, reason: "ServiceUnavailable", latencyMs: 7),
        ])
        // The retry's later answer has no unique id: the earlier one is not wiped.
        try run.record([AttemptOutcome(seq: claimed[1].seq, status: .failed, httpStatus: 410, reason: "Unregistered",
                                       invalidatedAt: 1_700_000_000_123, latencyMs: 9)])
        var rows: [DeliveryRow] = []
        try run.forEachDelivery { rows.append($0) }
        #expect(rows.map(\.latencyMs) == [42, 9])
        #expect(rows.map(\.apnsUniqueId) == ["u-1", nil])

        var c = DeliveryCounters()
        c.connectionsOpened = 2; c.jwtsSigned = 1; c.retries = 3
        try run.addCounters(c, seconds: 1.5, exitCode: 4)
        c.throttleDeferrals = 5
        try run.addCounters(c, seconds: 2.5, exitCode: 0)
        let f = try run.figures()
        #expect(f.activeSeconds == 4.0 && f.lastExitCode == 0)
        #expect(f.counters.connectionsOpened == 4 && f.counters.jwtsSigned == 2 && f.counters.retries == 6 && f.counters.throttleDeferrals == 5)

        var dead: [(String, Int64, String)] = []
        try run.forEachInvalidatedToken { t, at, reason, _ in dead.append((t, at, reason)) }
        #expect(dead.count == 1 && dead[0].0 == token(2).hex && dead[0].1 == 1_700_000_000_123 && dead[0].2 == "Unregistered")
    }

    @Test func suppressionListKeepsTheLatestTimestampPerEnvironmentAndTopic() throws {
        let shared = try SharedStore(besideStateFile: dir.file("state/c.sqlite"))
        let prod = SharedStore.SuppressionScope(environment: "production", topic: "com.example.app")
        let sandbox = SharedStore.SuppressionScope(environment: "sandbox", topic: "com.example.app")
        try shared.addSuppressions([SuppressedToken(token: "aa", invalidatedAt: 2_000, reason: "Unregistered")], scope: prod, campaign: "one")
        try shared.addSuppressions([SuppressedToken(token: "aa", invalidatedAt: 1_000, reason: "ExpiredToken"),
                                    SuppressedToken(token: "bb", invalidatedAt: 3_000, reason: "Unregistered")], scope: prod, campaign: "two")
        let found = try shared.suppressions(for: ["aa", "bb", "cc"], scope: prod)
        #expect(found["aa"] == SuppressedToken(token: "aa", invalidatedAt: 2_000, reason: "Unregistered"), "an older 410 does not replace a newer one")
        #expect(found["bb"]?.invalidatedAt == 3_000 && found["cc"] == nil)
        #expect(try shared.suppressions(for: ["aa"], scope: sandbox).isEmpty, "a token dead in production is not dead in sandbox")
        // Pages larger than one IN list.
        let many = (0..<1_200).map { SuppressedToken(token: String(format: "%064x", $0), invalidatedAt: 5, reason: "Unregistered") }
        try shared.addSuppressions(many, scope: sandbox, campaign: "three")
        #expect(try shared.suppressions(for: many.map(\.token), scope: sandbox).count == 1_200)
    }

    @Test func suppressionTouchesOnlyNeverAttemptedPendingRecipients() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try ingested(s, [1, 2, 3], registeredAt: [2: 1_234])
        let page = try run.suppressionCandidates(after: 0, limit: 10)
        #expect(page.map(\.token) == [1, 2, 3].map { token($0).hex })
        #expect(page.map(\.registeredAt) == [nil, 1_234, nil])
        let claimed = try run.claim(limit: 1)   // recipient 1 is now in flight: never suppressed
        try run.suppress([(claimed[0].seq, 99), (page[2].seq, 99)])
        try run.suppress([(page[2].seq, 99)])  // applied twice after a crash: harmless
        #expect(try run.statusCounts() == [.inflight: 1, .pending: 1, .suppressed: 1])
        #expect(try run.reasonCounts() == ["suppression_list": 1])
        #expect(try run.suppressionCandidates(after: 0, limit: 10).map(\.token) == [token(2).hex])
        try run.markSuppressionChecked()
        #expect(try run.suppressionChecked())
    }
}
