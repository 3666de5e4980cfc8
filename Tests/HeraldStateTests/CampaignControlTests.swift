import Foundation
import HeraldCore
@testable import HeraldState
import GRDB
import HeraldTestSupport
import Testing

/// `herald pause`, `herald resume` and `herald cancel` as the state file keeps them: one hold in
/// its own table, written by another connection (another process) while a run holds the file.
@Suite struct CampaignControlTests {
    let dir = TemporaryDirectory("control")

    func token(_ i: Int) -> DeviceToken { try! DeviceToken.normalize(String(format: "%064x", i)).get() }

    func campaign(_ name: String, recipients: Int) throws -> (StateStore, RunState) {
        let store = try StateStore(path: dir.file("\(name)/c.sqlite"))
        let run = try store.openRun(campaign: CampaignName(name))
        var b = IngestBatch()
        b.recipients = (1...recipients).map { i in
            IngestBatch.Recipient(token: token(i), location: RowLocation(file: "a.csv", line: i + 1), recipientId: "u\(i)",
                                  payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8), apnsId: "00000000-0000-5000-8000-\(String(format: "%012x", i))")
        }
        b.rows = recipients
        let state = store.run(run)
        try state.ingest(b)
        try state.markIngestComplete()
        return (store, state)
    }

    @Test func aPauseIsSeenByTheRunsConnectionAndStopsItsNextClaim() throws {
        let (store, state) = try campaign("p", recipients: 10)
        #expect(try store.control() == nil)
        #expect(try state.commit([], maxAttempts: 5, claim: 3).count == 3)
        // Another process: its own connection to the file.
        let other = try StateStore(path: store.path)
        let hold = try other.setControl(.paused, by: "alice@ops-1", reason: "wrong text")
        #expect(hold.action == .paused && hold.by == "alice@ops-1" && hold.reason == "wrong text")
        #expect(try store.control() == hold, "the run's own connection reads the committed hold")
        #expect(try state.commit([], maxAttempts: 5, claim: 3).isEmpty, "no claim once a hold is committed")
        #expect(try other.resume(by: "bob@ops-2") == hold)
        #expect(try store.control() == nil)
        #expect(try state.commit([], maxAttempts: 5, claim: 3).count == 3, "resumed: claims again")
        #expect(try other.resume(by: "bob@ops-2") == nil, "not paused: nothing to resume")
        #expect(try store.controlLog().map(\.action) == ["paused", "resumed"])
    }

    @Test func aCancelledCampaignStaysCancelled() throws {
        let (store, _) = try campaign("c", recipients: 2)
        let first = try store.setControl(.cancelled, by: "alice@ops-1", reason: "wrong price")
        #expect(try store.setControl(.cancelled, by: "bob@ops-2", reason: "again") == first, "the first cancellation is kept")
        #expect(throws: StateError.self) { try store.setControl(.paused, by: "bob@ops-2", reason: "") }
        do {
            _ = try store.resume(by: "bob@ops-2")
            Issue.record("a cancelled campaign was resumed")
        } catch {
            #expect(error.description.contains("cannot be paused or resumed") && error.description.contains("new campaign name"), "\(error)")
        }
        #expect(try store.control()?.action == .cancelled)
    }

    @Test func cancellingMakesEveryRecipientNotFinalCancelledWithTheReason() throws {
        let (store, state) = try campaign("r", recipients: 6)
        let claimed = try state.commit([], maxAttempts: 5, claim: 2)
        _ = try state.commit(claimed.map { AttemptOutcome(seq: $0.seq, status: .sent, httpStatus: 200) }, maxAttempts: 5, claim: 0)
        let hold = try store.setControl(.cancelled, by: "alice@ops-1", reason: "wrong price")
        #expect(try state.cancelRemaining(hold) == 4)
        let counts = try state.statusCounts()
        #expect(counts[.sent] == 2 && counts[.cancelled] == 4 && (counts[.pending] ?? 0) == 0)
        #expect(try state.reasonCounts() == ["cancelled: wrong price": 4])
        #expect(try state.openCount() == 0, "every recipient is final")
        #expect(try state.cancelRemaining(hold) == 0, "nothing left to cancel")
    }

    @Test func anUnreasonedCancellationSaysCancelled() {
        let hold = CampaignControl(action: .cancelled, by: "a@b", at: "2026-11-27T00:00:00Z", reason: "")
        #expect(hold.recipientReason == "cancelled")
        #expect(hold.description == "cancelled by a@b at 2026-11-27T00:00:00Z")
    }
}
