import Foundation
import HeraldCore
import HeraldState
import HeraldTestSupport
import Testing

@Suite struct StateStoreTests {
    let dir = TemporaryDirectory("state")

    func token(_ i: Int) -> DeviceToken { try! DeviceToken.normalize(String(format: "%064x", i)).get() }

    func recipient(_ i: Int, line: Int? = nil) -> IngestBatch.Recipient {
        IngestBatch.Recipient(token: token(i), location: RowLocation(file: "a.csv", line: line ?? i + 1), recipientId: "u\(i)",
                              payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8), apnsId: "00000000-0000-5000-8000-\(String(format: "%012x", i))")
    }

    @Test func stateFileIsPrivateAndMigrated() throws {
        let path = dir.file("s/c.sqlite")
        _ = try StateStore(path: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // Opening again runs no migration twice and keeps the data.
        let s = try StateStore(path: path)
        let run = try s.openRun(campaign: "c")
        _ = try s.ingest({ var b = IngestBatch(); b.recipients = [recipient(1)]; b.rows = 1; return b }(), run: run)
        let again = try StateStore(path: path)
        #expect(try again.recipientCount() == 1)
    }

    @Test func ingestDeduplicatesAndMovesTheCheckpointAtomically() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: "c")
        #expect(!run.resumed)
        var b = IngestBatch()
        b.recipients = [recipient(1), recipient(2), recipient(1, line: 10)]
        b.invalid = [InvalidRow(location: RowLocation(file: "a.csv", line: 4), reason: .invalidToken, field: "token", detail: "x")]
        b.rows = 4
        b.checkpointFile = 0
        b.checkpointLine = 10
        let r = try s.ingest(b, run: run)
        #expect(r.added == 2 && r.duplicates == 1)
        let resumed = try s.openRun(campaign: "c")
        #expect(resumed.resumed && resumed.id == run.id)
        #expect(resumed.rows == 4 && resumed.duplicates == 1)
        #expect(resumed.ingestedFile == 0 && resumed.ingestedLine == 10)
        #expect(try s.invalidCounts() == ["invalid_token": 1])
        var lines: [Int] = []
        try s.forEachDelivery { lines.append($0.line) }
        #expect(lines == [2, 3], "first occurrence wins, in audience order")
    }

    @Test func claimCommitsInflightBeforeReturningAndResumesInflight() throws {
        let path = dir.file("c.sqlite")
        let s = try StateStore(path: path)
        let run = try s.openRun(campaign: "c")
        var b = IngestBatch()
        b.recipients = (1...5).map { recipient($0) }
        b.rows = 5
        _ = try s.ingest(b, run: run)
        let first = try s.claim(limit: 3)
        #expect(first.map(\.token) == [token(1), token(2), token(3)])
        #expect(first.allSatisfy { $0.attempts == 1 })
        // A second process (a crash-resumed run) sees them inflight, on disk.
        let other = try StateStore(path: path)
        #expect(try other.statusCounts() == [.inflight: 3, .pending: 2])
        try other.resetRunAttempts()
        let again = try other.claim(limit: 10)
        #expect(again.count == 5, "inflight rows (outcome unknown) are claimed again with pending ones")
        #expect(again.first { $0.token == token(1) }?.attempts == 2)
        #expect(again.first { $0.token == token(1) }?.apnsId == first[0].apnsId, "same apns-id on every attempt")
    }

    @Test func outcomesRetriesAndRelease() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: "c")
        var b = IngestBatch()
        b.recipients = (1...4).map { recipient($0) }
        b.rows = 4
        _ = try s.ingest(b, run: run)
        _ = try s.claim(limit: 4, maxAttempts: 2)
        let later = Date().addingTimeInterval(3600)
        try s.record([
            AttemptOutcome(token: token(1), status: .sent, httpStatus: 200, responseApnsId: "x"),
            AttemptOutcome(token: token(2), status: .failed, httpStatus: 410, reason: "Unregistered", invalidatedAt: 1_700_000_000_000),
            AttemptOutcome(token: token(3), status: .retry, httpStatus: 503, reason: "ServiceUnavailable", retryAt: later),
        ])
        try s.release([token(4)])
        #expect(try s.statusCounts() == [.sent: 1, .failed: 1, .retry: 1, .pending: 1])
        #expect(try s.claim(limit: 10, maxAttempts: 2).map(\.token) == [token(4)], "retry waits for its time")
        #expect(try s.nextRetryTime(maxAttempts: 2).map { abs($0.timeIntervalSince(later)) < 1 } == true)
        #expect(try s.reasonCounts() == ["Unregistered": 1, "ServiceUnavailable": 1])
        var rows: [String: DeliveryRow] = [:]
        try s.forEachDelivery { rows[$0.token] = $0 }
        #expect(rows[token(2).hex]?.invalidatedAt == 1_700_000_000_000)
        #expect(rows[token(4).hex]?.attempts == 1, "a released recipient's attempt is not held against it")
        #expect(rows[token(1).hex]?.status.reportStatus == .sent)
        #expect(rows[token(3).hex]?.status.reportStatus == .pending)
    }

    @Test func finishedRunIsReturnedAsFinished() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: "c")
        try s.finishRun(run)
        let again = try s.openRun(campaign: "c")
        #expect(again.id == run.id && again.finishedAt != nil)
    }
}
