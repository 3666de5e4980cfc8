import Foundation
import GRDB
import HeraldCore
@testable import HeraldState
import HeraldTestSupport
import Testing

/// The first pass's token keys, collected while rows are staged, settle the pass exactly as reading
/// the tokens back would; and they are used only when they cover every staged row.
@Suite struct FirstPassKeysTests {
    let dir = TemporaryDirectory("first-pass-keys")

    func token(_ i: Int) -> DeviceToken { try! DeviceToken.normalize(String(format: "%064x", i * 7_919 % 1_000)).get() }

    /// Tokens repeat within and across batches (i * 7919 mod 1000: every 1000th row repeats).
    func batches(_ rows: Int, per: Int) -> [IngestBatch] {
        stride(from: 0, to: rows, by: per).map { start in
            var b = IngestBatch()
            for i in start..<min(rows, start + per) {
                b.recipients.append(IngestBatch.Recipient(token: token(i % 1_300), location: RowLocation(file: "a.csv", line: i + 2),
                                                          recipientId: "u\(i)", payload: Array("{\"i\":\(i)}".utf8), apnsId: "id-\(i)"))
            }
            b.rows = b.recipients.count
            b.checkpointLine = min(rows, start + per) + 1
            return b
        }
    }

    func settled(_ s: StateStore, _ run: RunInfo) throws -> (duplicates: Int, lines: [Int]) {
        var lines: [Int] = []
        try s.run(run).forEachDelivery { lines.append($0.line) }
        return (try s.run(run).reload().duplicates, lines)
    }

    @Test func keysCollectedWhileStagingSettleLikeReadingTheTokensBack() throws {
        let input = batches(3_000, per: 256)
        let withKeys = try StateStore(path: dir.file("keys.sqlite"))
        let a = try withKeys.openRun(campaign: CampaignName("c"))
        let keys = try #require(try withKeys.run(a).firstPassKeys(), "a fresh run collects keys")
        for b in input { try withKeys.run(a).ingest(b, keys: keys) }
        try withKeys.run(a).markIngestComplete(keys: keys)

        let readBack = try StateStore(path: dir.file("scan.sqlite"))
        let b = try readBack.openRun(campaign: CampaignName("c"))
        for batch in input { try readBack.run(b).ingest(batch) }
        try readBack.run(b).markIngestComplete()

        let got = try settled(withKeys, a), expected = try settled(readBack, b)
        #expect(expected.duplicates == 3_000 - 1_000)
        #expect(got.duplicates == expected.duplicates)
        #expect(got.lines == expected.lines, "each token's first row, in audience order")
    }

    /// Proof that the collected keys are what settles the pass: tokens changed in the file after
    /// staging are not seen, whereas reading back would see them.
    @Test func theCollectedKeysAreWhatSettlesThePass() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        let keys = try #require(try s.run(run).firstPassKeys())
        try s.run(run).ingest(batches(10, per: 10)[0], keys: keys)
        // Rows 2 and 3 get the same token behind the keys' back.
        try s.write { db in try db.execute(sql: "UPDATE audience_row SET token = ? WHERE line IN (2, 3)", arguments: [token(999).hex]) }
        try s.run(run).markIngestComplete(keys: keys)
        #expect(try settled(s, run).duplicates == 0)
    }

    @Test func aResumedIngestGetsNoKeysAndReadsTheTokensBack() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        let input = batches(2_000, per: 500)
        // The first process staged two batches, then died.
        try s.run(run).ingest(input[0], keys: try s.run(run).firstPassKeys())
        try s.run(run).ingest(input[1])
        #expect(try s.run(run).firstPassKeys() == nil)
        for b in input[2...] { try s.run(run).ingest(b) }
        try s.run(run).markIngestComplete(keys: nil)
        let result = try settled(s, run)
        #expect(result.duplicates == 1_000)
        #expect(result.lines.count == 1_000)
    }

    /// A batch whose commit failed leaves the keys incomplete: settling reads the tokens back, so
    /// the rows staged after (the batch again, by the resumed reader) are deduplicated too.
    @Test func keysMissingABatchAreNotUsed() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        let keys = try #require(try s.run(run).firstPassKeys())
        let input = batches(2_000, per: 1_000)
        try s.run(run).ingest(input[0], keys: keys)
        try s.write { db in
            try db.execute(sql: "CREATE TRIGGER fail BEFORE INSERT ON audience_row WHEN NEW.line = 1500 BEGIN SELECT RAISE(ABORT, 'disk on fire'); END")
        }
        #expect(throws: StateError.self) { try s.run(run).ingest(input[1], keys: keys) }
        try s.write { db in try db.execute(sql: "DROP TRIGGER fail") }
        try s.run(run).ingest(input[1], keys: keys)
        try s.run(run).markIngestComplete(keys: keys)
        let result = try settled(s, run)
        #expect(result.duplicates == 1_000, "rows 1001-2000 repeat rows 1-1000")
        #expect(result.lines == Array(2...1_001))
    }
}
