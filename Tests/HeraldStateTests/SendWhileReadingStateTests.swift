import Foundation
import HeraldCore
@testable import HeraldState
import GRDB
import HeraldTestSupport
import Testing

/// The state file's side of `audience.prescan: false`: each batch makes its rows recipients at
/// once (claimable before the audience is read), duplicates decided against every earlier batch.
@Suite struct SendWhileReadingStateTests {
    let dir = TemporaryDirectory("state-stream")

    func recipient(_ i: Int, line: Int) -> IngestBatch.Recipient {
        IngestBatch.Recipient(token: try! DeviceToken.normalize(String(format: "%064x", i)).get(), location: RowLocation(file: "a.csv", line: line),
                              recipientId: "u\(line)", payload: Array("{\"n\":\(line)}".utf8),
                              apnsId: "00000000-0000-5000-8000-\(String(format: "%012x", i))")
    }

    func batch(_ tokens: [Int], firstLine: Int) -> IngestBatch {
        var b = IngestBatch()
        b.recipients = tokens.enumerated().map { recipient($0.element, line: firstLine + $0.offset) }
        b.rows = tokens.count
        b.checkpointFile = 0
        b.checkpointLine = firstLine + tokens.count - 1
        return b
    }

    @Test func eachBatchIsClaimableAtOnceAndDuplicatesAreDecidedAgainstEveryEarlierRow() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = s.run(try s.openRun(campaign: CampaignName("c")))
        _ = try run.prepareSendWhileReading()
        let first = try run.ingestWhileSending(batch([1, 2, 1, 3], firstLine: 2), suppressed: [:])
        #expect(first.recipients == 3 && first.duplicates == 1)
        let claimed = try run.claim(limit: 10)
        #expect(claimed.map { String(decoding: $0.payload, as: UTF8.self) } == ["{\"n\":2}", "{\"n\":3}", "{\"n\":5}"],
                "claimable before the audience is read; the first row of a token wins")
        let hex4 = String(format: "%064x", 4)
        let second = try run.ingestWhileSending(batch([3, 4, 2, 5], firstLine: 6),
                                                suppressed: [SuppressedKey(app: 0, token: hex4): 1_700_000_000_000])
        #expect(second.recipients == 2 && second.duplicates == 2 && second.suppressed == 1)
        let next = try run.commit([], maxAttempts: 5, claim: 10)
        #expect(next.map(\.token.hex) == [String(format: "%064x", 5)], "a suppressed token is never claimable")
        let info = try run.reload()
        #expect(info.rows == 8 && info.duplicates == 3 && info.ingestedLine == 9)
        try run.markIngestComplete()
        let done = try run.reload()
        #expect(done.ingestComplete && done.duplicates == 3, "completion keeps the counts made while reading")
        #expect(try run.statusCounts() == [.inflight: 4, .suppressed: 1])
        let indexes = try s.read { db in try db.indexes(on: "recipient").map(\.name) }
        #expect(!indexes.contains("recipient_token"), "the token index lives only while reading")
    }

    /// Rows staged by a reading-first invocation (no recipients yet) are adopted in row order when
    /// the run goes on sending while reading, with their duplicates found and deleted.
    @Test func rowsStagedByAReadingFirstInvocationAreAdopted() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = s.run(try s.openRun(campaign: CampaignName("c")))
        try run.ingest(batch([1, 2, 1], firstLine: 2))
        let adopted = try run.prepareSendWhileReading()
        #expect(adopted.recipients == 2 && adopted.duplicates == 1)
        _ = try run.ingestWhileSending(batch([2, 3], firstLine: 5), suppressed: [:])
        // And back to reading first for the rest: completion adopts those rows too.
        try run.ingest(batch([3, 4, 4], firstLine: 7))
        try run.markIngestComplete()
        let info = try run.reload()
        #expect(info.duplicates == 4 && info.rows == 8)
        var lines: [Int] = []
        try run.forEachDelivery { lines.append($0.line) }
        #expect(lines == [2, 3, 6, 8])
    }
}

@Suite struct TimestampTests {
    @Test func isoIsUTCWithMillisecondsAndReadsBack() throws {
        #expect(Timestamp.iso(Date(timeIntervalSince1970: 1_700_000_000.123)) == "2023-11-14T22:13:20.123Z")
        #expect(Timestamp.iso(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.iso(Date(timeIntervalSince1970: 4_102_444_799.999)) == "2099-12-31T23:59:59.999Z")
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for t in [1_234_567_890.5, 1_780_000_000.007, 951_782_400.25] {   // 2000-02-29 among them
            let d = Date(timeIntervalSince1970: t)
            #expect(Timestamp.iso(d) == f.string(from: d), "same text as Foundation's formatter")
            #expect(abs(try #require(Timestamp.date(Timestamp.iso(d))).timeIntervalSince(d)) < 0.001)
        }
    }
}
