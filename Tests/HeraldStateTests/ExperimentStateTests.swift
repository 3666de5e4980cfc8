import Foundation
import HeraldCore
@testable import HeraldState
import GRDB
import HeraldTestSupport
import Testing

/// An experiment as the state file keeps it: each recipient's arm, the payloads of those waiting
/// for a winner, and the winner's release in one transaction.
@Suite struct ExperimentStateTests {
    let dir = TemporaryDirectory("experiment-state")

    func token(_ i: Int) -> DeviceToken { try! DeviceToken.normalize(String(format: "%064x", i)).get() }
    func payload(_ text: String) -> [UInt8] { Array(#"{"aps":{"alert":"\#(text) with enough text to be kept as a reference"}}"#.utf8) }

    /// Recipients 1–4 in the test (a, b, a, b), 5 held out, 6–9 waiting with every variant's payload.
    func campaign(_ name: String) throws -> (StateStore, RunState) {
        let store = try StateStore(path: dir.file("\(name)/c.sqlite"))
        let run = try store.openRun(campaign: CampaignName(name))
        var b = IngestBatch()
        for i in 1...9 {
            var r = IngestBatch.Recipient(token: token(i), location: RowLocation(file: "a.csv", line: i + 1), recipientId: "u\(i)",
                                          payload: [], apnsId: "00000000-0000-5000-8000-\(String(format: "%012x", i))")
            switch i {
            case 1...4:
                let v = i % 2 == 1 ? "a" : "b"
                r.arm = ExperimentArm(variant: v, rollout: false)
                r.payload = payload(v)
                r.headers = RecipientHeaders(priority: 10, collapseId: "herald:c:\(v)", expiration: .unset)
            case 5:
                r.arm = ExperimentArm(variant: ExperimentSpec.holdoutName, rollout: false)
            default:
                r.arm = ExperimentArm(variant: nil, rollout: true, alternatives: ["a", "b"].map {
                    VariantPayload(variant: $0, payload: payload("\($0) \(i)"),
                                   headers: RecipientHeaders(priority: 10, collapseId: "herald:c:\($0)", expiration: .unset))
                })
            }
            b.recipients.append(r)
        }
        b.rows = 9
        let state = store.run(run)
        try state.ingest(b)
        try state.markIngestComplete()
        return (store, state)
    }

    func rows(_ state: RunState) throws -> [DeliveryRow] {
        var out: [DeliveryRow] = []
        try state.forEachDelivery { out.append($0) }
        return out
    }

    @Test func eachRecipientStartsInItsArm() throws {
        let (_, state) = try campaign("start")
        let r = try rows(state)
        #expect(r.map(\.status) == [.pending, .pending, .pending, .pending, .heldOut, .awaitingWinner, .awaitingWinner, .awaitingWinner, .awaitingWinner])
        #expect(r.map { $0.variant ?? "-" } == ["a", "b", "a", "b", "holdout", "-", "-", "-", "-"])
        #expect(r.map { $0.rollout == true } == [false, false, false, false, false, true, true, true, true])
        #expect(try state.awaitingWinnerCount() == 4)
        #expect(try state.openCount() == 4, "waiting and held-out recipients are not open")
        // Only the four test recipients are claimed.
        let claimed = try state.commit([], maxAttempts: 5, claim: 100)
        #expect(claimed.map(\.token) == (1...4).map(token))
        #expect(claimed.map { String(decoding: $0.payload, as: UTF8.self).contains("\"a with") } == [true, false, true, false])
        #expect(claimed.map { $0.headers?.collapseId } == ["herald:c:a", "herald:c:b", "herald:c:a", "herald:c:b"])
        let arms = try state.variantCounts()
        #expect(arms.map { "\($0.variant ?? "-")/\($0.rollout)/\($0.total)" } == ["a/false/2", "b/false/2", "holdout/false/1", "-/true/4"])
    }

    @Test func releasingTheWinnerGivesTheWaitingItsPayloadOnce() throws {
        let (_, state) = try campaign("release")
        // The waiting rows' payloads are kept against their variant's reference, as staged rows' are.
        let kept = try state.read { db in
            try Row.fetchAll(db, sql: "SELECT v.variant, r.variant FROM variant_payload v JOIN payload_reference r ON r.id = v.payload_reference")
        }
        #expect(kept.count == 8 && kept.allSatisfy { ($0[0] as String) == ($0[1] as String) }, "\(kept)")
        #expect(try state.releaseWinner("b") == .released(4))
        let r = try rows(state)
        #expect(r[5...].allSatisfy { $0.status == .pending && $0.variant == "b" && $0.rollout == true })
        #expect(r[4].status == .heldOut, "the holdout is never released")
        #expect(try state.awaitingWinnerCount() == 0)
        #expect(try state.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM variant_payload") } == 0, "the alternatives are gone")
        // The claim after the test's takes the winner's payload and collapse id.
        let claimed = try state.commit([], maxAttempts: 5, claim: 100)
        #expect(claimed.map(\.token) == [1, 2, 3, 4, 6, 7, 8, 9].map(token))
        let rollout = Array(claimed[4...])
        #expect(rollout.map { String(decoding: $0.payload, as: UTF8.self) } == (6...9).map { String(decoding: payload("b \($0)"), as: UTF8.self) })
        #expect(rollout.allSatisfy { $0.headers?.collapseId == "herald:c:b" })
        #expect(try state.releaseWinner("b") == .released(0), "a second release finds nobody waiting")
    }

    /// A run killed with test recipients in flight, then a winner: the in-flight ones count their
    /// attempt and go again (outcome unknown), the released ones start with none.
    @Test func aReleaseAfterAKillRecoversTheClaimsFirst() throws {
        let (_, state) = try campaign("killed")
        #expect(try state.commit([], maxAttempts: 5, claim: 100).count == 4)
        #expect(try state.releaseWinner("a") == .released(4))
        let r = try rows(state)
        #expect(r[0...3].allSatisfy { $0.status == .pending && $0.attempts == 1 })
        #expect(r[5...].allSatisfy { $0.status == .pending && $0.attempts == 0 && $0.variant == "a" })
        let claimed = try state.commit([], maxAttempts: 5, claim: 100)
        #expect(claimed.map(\.token) == ([1, 2, 3, 4, 6, 7, 8, 9]).map(token))
    }

    @Test func aWinnerTheWaitingWereNotReadWithIsRefusedAndChangesNothing() throws {
        let (_, state) = try campaign("missing")
        #expect(try state.releaseWinner("c") == .missingPayload(winner: "c", recipients: 4, variants: ["a", "b"]))
        #expect(try state.awaitingWinnerCount() == 4)
        #expect(try state.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM variant_payload") } == 8)
    }

    @Test func cancellingCancelsTheWaitingButNotTheHoldout() throws {
        let (store, state) = try campaign("cancel")
        let hold = try store.setControl(.cancelled, by: "alice@ops", reason: "")
        #expect(try state.cancelRemaining(hold) == 8, "four test recipients and four waiting")
        let r = try rows(state)
        #expect(r.filter { $0.status == .cancelled }.count == 8 && r[4].status == .heldOut)
    }

    @Test func finishingDropsTheAlternatives() throws {
        let (_, state) = try campaign("finish")
        try state.finish()
        #expect(try state.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM variant_payload") } == 0)
    }
}
