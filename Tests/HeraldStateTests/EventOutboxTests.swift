import Foundation
import HeraldCore
@testable import HeraldState
import GRDB
import HeraldTestSupport
import Testing

/// The events outbox (`StateStore.captureEvents`): an outcome and its event are one transaction,
/// whichever statement makes the recipient final; nothing else writes an event; a sink's
/// delivered events leave the outbox only once every sink has them.
@Suite struct EventOutboxTests {
    let dir = TemporaryDirectory("outbox")

    func token(_ i: Int) -> DeviceToken { try! DeviceToken.normalize(String(format: "%064x", i)).get() }

    func started(_ name: String, count: Int, capture: Bool = true) throws -> (StateStore, RunState) {
        let store = try StateStore(path: dir.file("\(name).sqlite"))
        if capture { try store.captureEvents() }
        let run = store.run(try store.openRun(campaign: CampaignName(name)))
        var b = IngestBatch()
        b.recipients = (1...count).map { i in
            IngestBatch.Recipient(token: token(i), location: RowLocation(file: "a.csv", line: i + 1), recipientId: "u\(i)",
                                  payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8), apnsId: "00000000-0000-5000-8000-\(String(format: "%012x", i))")
        }
        b.rows = count
        try run.ingest(b)
        try run.markIngestComplete()
        return (store, run)
    }

    @Test func everyFinalOutcomeWritesOneEventAndNothingElseDoes() throws {
        let (store, run) = try started("final", count: 8)
        let c = try run.claim(limit: 8, maxAttempts: 3)
        try run.record([
            AttemptOutcome(seq: c[0].seq, status: .sent, httpStatus: 200),
            AttemptOutcome(seq: c[1].seq, status: .failed, httpStatus: 410, reason: "Unregistered", invalidatedAt: 1_700_000_000_000),
            AttemptOutcome(seq: c[2].seq, status: .retry, httpStatus: 503, reason: "ServiceUnavailable", retryAt: Date()),
            AttemptOutcome(seq: c[3].seq, status: .failed, httpStatus: 400, reason: "BadDeviceToken"),
        ])
        try run.markThrottled([c[4].seq])
        try run.release([c[5].seq, c[6].seq, c[7].seq])
        var events = try store.events(after: 0, limit: 100)
        #expect(events.map(\.token) == [token(1), token(2), token(4), token(5)].map(\.hex))
        #expect(events.map(\.status) == [.sent, .failed, .failed, .throttled])
        #expect(events[1].invalidatedAt == 1_700_000_000_000 && events[1].httpStatus == 410 && events[1].reason == "Unregistered")
        #expect(events.allSatisfy { $0.campaign == "final" && !$0.runId.isEmpty && $0.at.hasSuffix("Z") })
        #expect(events[0].recipientId == "u1" && events[0].apnsId == "00000000-0000-5000-8000-000000000001")
        #expect(events.map(\.id) == events.map(\.id).sorted() && Set(events.map(\.id)).count == 4)

        // The retry is answered later: its event comes then, once.
        try run.endClaims()
        let again = try run.claim(limit: 8, maxAttempts: 3, now: Date().addingTimeInterval(1))
        #expect(Set(again.map(\.seq)).isSuperset(of: [c[2].seq]))
        try run.record(again.map { AttemptOutcome(seq: $0.seq, status: .sent, httpStatus: 200) })
        events = try store.events(after: events.last!.id, limit: 100)
        #expect(Set(events.map(\.token)) == Set([3, 6, 7, 8].map { token($0).hex }))
        #expect(try store.eventsWaiting(after: 0) == 8, "one event per recipient")
    }

    @Test func anOutcomeRolledBackTakesItsEventWithIt() throws {
        let (store, run) = try started("rollback", count: 2)
        let c = try run.claim(limit: 2, maxAttempts: 3)
        struct Boom: Error {}
        #expect(throws: StateError.self) {
            try store.write { db in
                try run.record(db, [AttemptOutcome(seq: c[0].seq, status: .sent, httpStatus: 200)])
                throw Boom()
            }
        }
        #expect(try store.eventsWaiting(after: 0) == 0)
        try run.record([AttemptOutcome(seq: c[0].seq, status: .sent, httpStatus: 200)])
        #expect(try store.eventsWaiting(after: 0) == 1)
    }

    @Test func withoutCaptureNothingIsWritten() throws {
        let (store, run) = try started("off", count: 2, capture: false)
        let c = try run.claim(limit: 2, maxAttempts: 3)
        try run.record(c.map { AttemptOutcome(seq: $0.seq, status: .sent, httpStatus: 200) })
        #expect(try store.eventsWaiting(after: 0) == 0)
        // TEMP triggers live on the connection that made them: asked on the writer itself, which
        // has them once capture is on (the same question on a capturing store finds both).
        let triggers = "SELECT name FROM sqlite_temp_master WHERE type = 'trigger' ORDER BY name"
        #expect(try store.write { db in try String.fetchAll(db, sql: triggers) }.isEmpty)
        let (capturing, _) = try started("on", count: 1)
        #expect(try capturing.write { db in try String.fetchAll(db, sql: triggers) } == ["event_on_final_insert", "event_on_outcome"])
    }

    @Test func suppressionVanishingAndGivingUpWriteEventsToo() throws {
        let (store, run) = try started("others", count: 4)
        try run.suppress([(seq: try run.suppressionCandidates(after: 0, limit: 1)[0].seq, invalidatedAt: 42)])
        let c = try run.claim(limit: 3, maxAttempts: 3, now: Date().addingTimeInterval(-7200))
        try run.record([AttemptOutcome(seq: c[0].seq, status: .retry, httpStatus: 503, reason: "ServiceUnavailable",
                                       retryAt: Date().addingTimeInterval(3600), attemptedAt: Date().addingTimeInterval(-7200))])
        #expect(try run.giveUp(olderThan: 3600) == 1)
        let events = try store.events(after: 0, limit: 10)
        #expect(events.map(\.status) == [.suppressed, .failed])
        #expect(events[0].reason == "suppression_list" && events[0].invalidatedAt == 42)
        #expect(events[1].reason == "gave_up")
    }

    @Test func eventsLeaveTheOutboxOnlyOnceEverySinkHasThem() throws {
        let (store, run) = try started("sinks", count: 10)
        let c = try run.claim(limit: 10, maxAttempts: 3)
        try run.record(c.map { AttemptOutcome(seq: $0.seq, status: .sent, httpStatus: 200) })
        let ids = try store.events(after: 0, limit: 10).map(\.id)
        try store.markEventsDelivered(sink: "url", through: ids[5], count: 6, sinks: ["url", "file"])
        #expect(try store.eventsWaiting(after: 0) == 10, "the file has none yet")
        try store.markEventsDelivered(sink: "file", through: ids[9], count: 10, sinks: ["url", "file"])
        #expect(try store.eventsWaiting(after: 0) == 4, "both have the first six")
        #expect(try store.eventCursor(sink: "url") == ids[5] && store.eventCursor(sink: "file") == ids[9])
        #expect(try store.eventSinks(["url", "file"]) == [EventSinkState(sink: "url", delivered: 6, waiting: 4),
                                                          EventSinkState(sink: "file", delivered: 10, waiting: 0)])
        try store.markEventsDelivered(sink: "url", through: ids[9], count: 4, sinks: ["url", "file"])
        #expect(try store.eventsWaiting(after: 0) == 0)

        // Ids are never reused, even after the outbox was emptied: `<run>.<id>` names one event for good.
        try run.endClaims()
        try run.finish()
        let store2 = try StateStore(path: store.path)
        try store2.captureEvents()
        let next = store2.run(try store2.openRun(campaign: CampaignName("sinks"), newRun: true))
        var b = IngestBatch()
        b.recipients = [IngestBatch.Recipient(token: token(1), location: RowLocation(file: "a.csv", line: 2), recipientId: "u1",
                                              payload: Array("{}".utf8), apnsId: "x")]
        b.rows = 1
        try next.ingest(b)
        try next.markIngestComplete()
        try next.record(try next.claim(limit: 1, maxAttempts: 3).map { AttemptOutcome(seq: $0.seq, status: .sent, httpStatus: 200) })
        #expect(try store2.events(after: 0, limit: 10).map(\.id) == [ids[9] + 1])
    }
}
