import Foundation
import HeraldCore
@testable import HeraldState
import GRDB
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
        let run = try s.openRun(campaign: CampaignName("c"))
        try s.run(run).ingest({ var b = IngestBatch(); b.recipients = [recipient(1)]; b.rows = 1; return b }())
        try s.run(run).markIngestComplete()
        let again = try StateStore(path: path)
        #expect(try again.run(run).recipientCount() == 1)
        #expect(try again.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") } == 8192, "set before the switch to WAL")
    }

    @Test func ingestDeduplicatesAndMovesTheCheckpointAtomically() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        #expect(!run.resumed)
        var b = IngestBatch()
        b.recipients = [recipient(1), recipient(2), recipient(1, line: 10)]
        b.invalid = [InvalidRow(location: RowLocation(file: "a.csv", line: 4), reason: .invalidToken, field: "token", detail: "x")]
        b.rows = 4
        b.checkpointFile = 0
        b.checkpointLine = 10
        try s.run(run).ingest(b)
        let midway = try s.openRun(campaign: CampaignName("c"))
        #expect(midway.rows == 4 && midway.ingestedLine == 10 && !midway.ingestComplete)
        #expect(try s.run(run).recipientCount() == 0, "recipients are settled when the audience is fully read")
        try s.run(run).markIngestComplete()
        let resumed = try s.openRun(campaign: CampaignName("c"))
        #expect(resumed.resumed && resumed.id == run.id)
        #expect(resumed.rows == 4 && resumed.duplicates == 1)
        #expect(resumed.ingestedFile == 0 && resumed.ingestedLine == 10)
        #expect(try s.run(run).invalidCounts() == ["invalid_token": 1])
        var lines: [Int] = []
        try s.run(run).forEachDelivery { lines.append($0.line) }
        #expect(lines == [2, 3], "first occurrence wins, in audience order")
    }

    /// Staged rows are bound without copies from one reused buffer: every field of every row comes
    /// back as it went in, empty text as empty (not NULL), absent headers as the job's.
    @Test func stagedRowsKeepEveryField() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        var b = IngestBatch()
        b.recipients = [
            IngestBatch.Recipient(token: token(1), location: RowLocation(file: "a.csv", line: 2), recipientId: "", payload: [],
                                  apnsId: "id-1", headers: RecipientHeaders(priority: 5, collapseId: nil, expiration: .relative(60))),
            IngestBatch.Recipient(token: token(2), location: RowLocation(file: "b-with-a-longer-name.csv", line: 3),
                                  recipientId: "a-recipient-id-longer-than-fifteen-bytes", payload: Array(#"{"aps":{"alert":"é"}}"#.utf8),
                                  apnsId: "id-2", headers: RecipientHeaders(priority: 10, collapseId: "c-2", expiration: .absolute(1_700_000_000)),
                                  registeredAt: 42),
            IngestBatch.Recipient(token: token(3), location: RowLocation(file: "a.csv", line: 4), recipientId: "u3", payload: [1, 0, 2],
                                  apnsId: "id-3"),
        ]
        b.rows = 3
        try s.run(run).ingest(b)
        try s.run(run).markIngestComplete()
        let claimed = try s.run(run).claim(limit: 10)
        #expect(claimed.map(\.token) == [token(1), token(2), token(3)])
        #expect(claimed.map(\.apnsId) == ["id-1", "id-2", "id-3"])
        #expect(claimed.map(\.payload) == [[], Array(#"{"aps":{"alert":"é"}}"#.utf8), [1, 0, 2]])
        #expect(claimed[0].headers == RecipientHeaders(priority: 5, collapseId: nil, expiration: .relative(60)))
        #expect(claimed[1].headers == RecipientHeaders(priority: 10, collapseId: "c-2", expiration: .absolute(1_700_000_000)))
        #expect(claimed[2].headers == nil)
        var rows: [DeliveryRow] = []
        try s.run(run).forEachDelivery { rows.append($0) }
        #expect(rows.map(\.recipientId) == ["", "a-recipient-id-longer-than-fifteen-bytes", "u3"])
        #expect(rows.map(\.file) == ["a.csv", "b-with-a-longer-name.csv", "a.csv"])
        #expect(try s.read { db in try Int64.fetchOne(db, sql: "SELECT registered_at FROM audience_row WHERE token = ?", arguments: [token(2).hex]) } == 42)
    }

    /// Tokens of other lengths than 32 bytes have hashed keys: their repeats are found by comparing
    /// the token texts, beside 32-byte tokens whose keys are exact.
    @Test func deduplicatesTokensOfAnyLength() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        func short(_ i: Int, line: Int) -> IngestBatch.Recipient {
            IngestBatch.Recipient(token: try! DeviceToken.normalize(String(format: "%016x", i)).get(), location: RowLocation(file: "a.csv", line: line),
                                  recipientId: "s\(i)", payload: [1], apnsId: "x")
        }
        var b = IngestBatch()
        b.recipients = [short(1, line: 2), recipient(1, line: 3), short(1, line: 4), short(2, line: 5), recipient(1, line: 6), short(2, line: 7)]
        b.rows = 6
        try s.run(run).ingest(b)
        try s.run(run).markIngestComplete()
        #expect(try s.run(run).reload().duplicates == 3)
        var lines: [Int] = []
        try s.run(run).forEachDelivery { lines.append($0.line) }
        #expect(lines == [2, 3, 5])
    }

    /// Every token under one key, a collision as bad as it gets: deduplication still compares the
    /// tokens themselves, so each distinct token becomes a recipient (its first row, in audience
    /// order) and only true repeats count as duplicates.
    @Test func aTokenKeyCollisionNeverDropsARecipient() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        var b = IngestBatch()
        b.recipients = [recipient(1), recipient(2), recipient(1, line: 10), recipient(3), recipient(2, line: 11), recipient(2, line: 12)]
        b.rows = 6
        try s.run(run).ingest(b)
        try s.write { db in
            try RunState.settleFirstPass(run: run.id, scratchDirectory: dir.path, db: db, tokenKey: { _ in TokenKey(high: 7, low: 7) })
        }
        #expect(try s.run(run).reload().duplicates == 3)
        var lines: [Int] = []
        try s.run(run).forEachDelivery { lines.append($0.line) }
        #expect(lines == [2, 3, 4])
    }

    @Test func claimCommitsInflightBeforeReturningAndResumesInflight() throws {
        let path = dir.file("c.sqlite")
        let s = try StateStore(path: path)
        let run = try s.openRun(campaign: CampaignName("c"))
        var b = IngestBatch()
        b.recipients = (1...5).map { recipient($0) }
        b.rows = 5
        try s.run(run).ingest(b)
        try s.run(run).markIngestComplete()
        let first = try s.run(run).claim(limit: 3)
        #expect(first.map(\.token) == [token(1), token(2), token(3)])
        #expect(first.allSatisfy { $0.attempts == 1 })
        // A second process (a crash-resumed run) sees them inflight, on disk.
        let other = try StateStore(path: path)
        #expect(try other.run(run).statusCounts() == [.inflight: 3, .pending: 2])
        // In flight: not claimed again until recovered (this claim takes 4 and 5, in flight too).
        #expect(try other.run(run).claim(limit: 10).map(\.token) == [token(4), token(5)])
        #expect(try other.run(run).statusCounts() == [.inflight: 5])
        try other.run(run).resetRunAttempts()
        try other.run(run).recoverInflight()
        #expect(try other.run(run).statusCounts() == [.pending: 5], "recovered: outcome unknown, to be sent again")
        let again = try other.run(run).claim(limit: 10)
        #expect(again.map(\.token) == (1...5).map { token($0) }, "inflight rows (outcome unknown) are claimed again")
        #expect(again.allSatisfy { $0.attempts == 2 }, "the unknown attempt counts")
        #expect(again.first { $0.token == token(1) }?.apnsId == first[0].apnsId, "same apns-id on every attempt")
    }

    /// Pending rows have no index of their own: a claim walks the run's rows from the mark. Once
    /// none is left above it the mark moves to the run's last row, so a resumed run whose
    /// recipients were all answered, or a run waiting for its retries, does not walk every
    /// answered row again on each claim.
    @Test func aClaimThatRunsOutOfPendingRowsMovesTheMarkToTheRunsEnd() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        let r = s.run(run)
        try r.ingest(batch(Array(1...10)))
        try r.markIngestComplete()
        func mark() throws -> Int64 { try s.read { db in try Int64.fetchOne(db, sql: "SELECT claimed_through FROM run WHERE id = ?", arguments: [run.id])! } }
        let last = try s.read { db in try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM recipient")! }
        let first = try r.claim(limit: 4)
        #expect(try mark() == first[3].seq, "pending rows remain: the mark is the last one claimed")
        let rest = try r.claim(limit: 10)
        #expect(rest.map(\.token) == (5...10).map { token($0) })
        #expect(try mark() == last)
        #expect(try r.statusCounts() == [.inflight: 10])
        try r.record((first + rest).map { AttemptOutcome(seq: $0.seq, status: .sent, httpStatus: 200) })
        try r.endClaims()
        // The next invocation: nothing pending; the first claim walks the run once and moves the mark.
        #expect(try r.claim(limit: 10).isEmpty)
        #expect(try mark() == last)
        #expect(try r.statusCounts() == [.sent: 10], "answered rows below the mark are not in flight")
        // Recipients recorded after the mark moved (sending while reading) come after it and are
        // claimed: SendWhileReadingStateTests.eachBatchIsClaimableAtOnce…
    }

    @Test func outcomesRetriesAndRelease() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        var b = IngestBatch()
        b.recipients = (1...4).map { recipient($0) }
        b.rows = 4
        try s.run(run).ingest(b)
        try s.run(run).markIngestComplete()
        let c = try s.run(run).claim(limit: 4, maxAttempts: 2)
        let later = Date().addingTimeInterval(3600)
        try s.run(run).record([
            AttemptOutcome(seq: c[0].seq, status: .sent, httpStatus: 200, responseApnsId: "x"),
            AttemptOutcome(seq: c[1].seq, status: .failed, httpStatus: 410, reason: "Unregistered", invalidatedAt: 1_700_000_000_000),
            AttemptOutcome(seq: c[2].seq, status: .retry, httpStatus: 503, reason: "ServiceUnavailable", retryAt: later),
        ])
        try s.run(run).release([c[3].seq])
        // Put back while the sender stops: claimable again once it has ended its claims.
        #expect(try s.run(run).claim(limit: 10, maxAttempts: 2).isEmpty)
        try s.run(run).endClaims()
        #expect(try s.run(run).statusCounts() == [.sent: 1, .failed: 1, .retry: 1, .pending: 1])
        #expect(try s.run(run).claim(limit: 10, maxAttempts: 2).map(\.token) == [token(4)], "retry waits for its time")
        #expect(try s.run(run).nextRetryTime(maxAttempts: 2).map { abs($0.timeIntervalSince(later)) < 1 } == true)
        #expect(try s.run(run).reasonCounts() == ["Unregistered": 1, "ServiceUnavailable": 1])
        var rows: [String: DeliveryRow] = [:]
        try s.run(run).forEachDelivery { rows[$0.token] = $0 }
        #expect(rows[token(2).hex]?.invalidatedAt == 1_700_000_000_000)
        #expect(rows[token(4).hex]?.attempts == 0, "a claim counts no attempt, and a released recipient none either")
        #expect(rows[token(4).hex]?.firstAttemptAt == nil)
        #expect(rows[token(1).hex]?.attempts == 1 && rows[token(3).hex]?.attempts == 1, "each recorded answer is one attempt")
        #expect(rows[token(1).hex]?.firstAttemptAt != nil && rows[token(1).hex]?.firstAttemptAt == rows[token(1).hex]?.lastAttemptAt)
        #expect(rows[token(1).hex]?.status.reportStatus == .sent)
        #expect(rows[token(3).hex]?.status.reportStatus == .pending)
    }

    @Test func finishedRunIsReturnedAsFinished() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        try s.run(run).finish()
        let again = try s.openRun(campaign: CampaignName("c"))
        #expect(again.id == run.id && again.finishedAt != nil && again.disposition == .finished)
    }

    /// A finished run's staged payloads are dropped (a daily campaign would otherwise keep every
    /// day's), while its recipients, and so its reports, stay whole.
    @Test func finishingDropsTheStagedRowsButKeepsTheRecipients() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        try s.run(run).ingest(batch([1, 2, 3]))
        try s.run(run).markIngestComplete()
        try s.run(run).record(try s.run(run).claim(limit: 10).map { AttemptOutcome(seq: $0.seq, status: .sent, httpStatus: 200) })
        #expect(try s.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM audience_row") } == 3)
        try s.run(run).finish()
        #expect(try s.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM audience_row") } == 0)
        var sent = 0
        try s.run(run).forEachDelivery { if $0.status == .sent { sent += 1 } }
        let count = try s.run(run).recipientCount()
        #expect(sent == 3 && count == 3)
    }

    /// Finishing empties the staging table whole only when no other run has rows staged in it
    /// (one staged by an older version that did not drop them, say): those stay.
    @Test func finishingKeepsAnotherRunsStagedRows() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        try s.run(run).ingest(batch([1, 2, 3]))
        try s.write { db in
            try db.execute(sql: """
                INSERT INTO audience_row (run, pass, token, file, line, recipient_id, payload, apns_id)
                    SELECT run + 100, pass, token, file, line, recipient_id, payload, apns_id FROM audience_row WHERE run = ? LIMIT 2
                """, arguments: [run.id])
        }
        try s.run(run).finish()
        let staged = try s.read { db in try Int64.fetchAll(db, sql: "SELECT run FROM audience_row ORDER BY id") }
        #expect(staged == [run.id + 100, run.id + 100])
    }

    /// Finishing frees the staged table's pages without writing them again, even where the SQLite
    /// build zeroes deleted content by default (Debian's: secure_delete on): the WAL gets the free
    /// list's few pages, not a zeroed copy of the table. The connection's setting is left as found.
    @Test func finishingDoesNotRewriteTheStagedPages() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        try s.db.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA secure_delete = ON") }
        let run = try s.openRun(campaign: CampaignName("c"))
        var b = batch(Array(1...2_000))
        // Payloads with nothing in common, so each is staged whole (as differences from a
        // reference they would take a few bytes each) and the table spans hundreds of pages.
        var rng = SplitMix64(seed: 1)
        for i in b.recipients.indices {
            b.recipients[i].payload = Array(#"{"aps":{"alert":""#.utf8) + (0..<2_000).map { _ in UInt8.random(in: 97...122, using: &rng) }
                + Array(#""}}"#.utf8)
        }
        try s.run(run).ingest(b)
        try s.run(run).markIngestComplete()
        try s.run(run).record(try s.run(run).claim(limit: 2_000).map { AttemptOutcome(seq: $0.seq, status: .sent, httpStatus: 200) })
        let stagedPages = try s.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM dbstat WHERE name = 'audience_row'") ?? 0
        }
        #expect(stagedPages > 400)
        try s.db.writeWithoutTransaction { db in _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        #expect(try FileManager.default.attributesOfItem(atPath: dir.file("c.sqlite") + "-wal")[.size] as? Int == 0)

        try s.run(run).finish()

        let walBytes = try FileManager.default.attributesOfItem(atPath: dir.file("c.sqlite") + "-wal")[.size] as? Int ?? 0
        let frames = walBytes / (8_192 + 24)
        #expect(frames < 20, "finishing wrote \(frames) pages to the WAL for a staged table of \(stagedPages)")
        #expect(try s.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM audience_row") } == 0)
        #expect(try s.read { db in try Int.fetchOne(db, sql: "PRAGMA secure_delete") } == 1)
    }

    /// Payloads of one template are staged as differences from a reference payload: a few dozen
    /// bytes each instead of the whole payload. A batch whose first payload shares little with
    /// the reference (the job's template changed) starts a new one; every claim gets its payload
    /// back byte for byte, and the references go with the staged rows when the run finishes.
    @Test func payloadsAreStagedAsDifferencesFromAReference() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        func digest(_ i: Int) -> [UInt8] {
            Array(#"{"aps":{"alert":{"title":"Your weekly summary is ready","body":"Hi user \#(i), you have \#(i % 17) unread messages."},"badge":\#(i % 17),"sound":"default"},"user_id":"u-\#(i)"}"#.utf8)
        }
        func offer(_ i: Int) -> [UInt8] {
            Array(#"{"aps":{"content-available":1},"offer":{"code":"SPRING-\#(i)","expires":"2026-12-01","terms":"one per customer, while stocks last"}}"#.utf8)
        }
        var expected: [Int: [UInt8]] = [:]
        for (ids, render) in [(Array(1...300), digest), (Array(301...600), digest), (Array(601...900), offer)] as [([Int], (Int) -> [UInt8])] {
            var b = batch(ids)
            for i in b.recipients.indices { b.recipients[i].payload = render(ids[i]); expected[ids[i]] = render(ids[i]) }
            try s.run(run).ingest(b)
        }
        try s.run(run).markIngestComplete()
        let staged = try s.read { db in
            try Row.fetchAll(db, sql: "SELECT length(payload) AS n, payload_reference AS ref FROM audience_row ORDER BY id")
        }
        #expect(try s.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM payload_reference WHERE run = ?", arguments: [run.id]) } == 2)
        #expect(staged.allSatisfy { ($0["ref"] as Int64?) != nil }, "every payload shares most of its bytes with a reference")
        let longest = staged.map { $0["n"] as Int }.max() ?? 0
        #expect(longest < 40, "staged payloads of up to \(longest) bytes; rendered ones are over 100")

        let claimed = try s.run(run).claim(limit: 1_000)
        #expect(claimed.count == 900)
        for c in claimed {
            let i = Int(c.token.hex, radix: 16)!
            #expect(c.payload == expected[i], "recipient \(i)")
        }
        try s.run(run).record(claimed.map { AttemptOutcome(seq: $0.seq, status: .sent, httpStatus: 200) })
        try s.run(run).finish()
        #expect(try s.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM payload_reference") } == 0)
    }

    /// A staged payload whose reference is gone (the file changed outside herald) stops the claim
    /// with an error naming the recipient, instead of sending something else.
    @Test func aPayloadThatCannotBeReadBackIsAnError() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        var b = batch([1, 2])
        for i in b.recipients.indices { b.recipients[i].payload = Array(#"{"aps":{"alert":"Your order has shipped"},"order":"A-1"}"#.utf8) }
        try s.run(run).ingest(b)
        try s.run(run).markIngestComplete()
        try s.write { db in try db.execute(sql: "UPDATE payload_reference SET bytes = x'7b7d'") }
        #expect {
            _ = try s.run(run).claim(limit: 10)
        } throws: { error in
            "\(error)".contains("staged payload of recipient") && "\(error)".contains("cannot be read back")
        }
    }

    func batch(_ ids: [Int], line: Int = 0) -> IngestBatch {
        var b = IngestBatch()
        b.recipients = ids.map { recipient($0) }
        b.rows = ids.count
        b.checkpointFile = 0
        b.checkpointLine = line
        return b
    }

    @Test func newRunAndNewPeriodStartAfreshButAnUnfinishedRunIsResumedFirst() throws {
        let s = try StateStore(path: dir.file("daily.sqlite"))
        let daily = CampaignName("daily-{date}")
        let day1 = Date(timeIntervalSince1970: 1_763_683_200)  // 2025-11-21T00:00:00Z
        let first = try s.openRun(campaign: daily, now: day1.addingTimeInterval(23 * 3600))
        #expect(first.campaign == "daily-2025-11-21" && first.disposition == .new)
        try s.run(first).ingest(batch([1, 2]))
        try s.run(first).markIngestComplete()
        // After midnight, the unfinished run of yesterday is resumed, not a second campaign started.
        let rerun = try s.openRun(campaign: daily, now: day1.addingTimeInterval(25 * 3600))
        #expect(rerun.id == first.id && rerun.disposition == .resumed && rerun.campaign == "daily-2025-11-21")
        // --new-run does not abandon an unfinished run either.
        #expect(try s.openRun(campaign: daily, newRun: true, now: day1.addingTimeInterval(25 * 3600)).id == first.id)
        try s.run(first).finish()
        // Same day again: finished, nothing to do.
        #expect(try s.openRun(campaign: daily, now: day1.addingTimeInterval(23.5 * 3600)).disposition == .finished)
        // Next day: a new run with its own recipients (the same tokens are sent again).
        let second = try s.openRun(campaign: daily, now: day1.addingTimeInterval(26 * 3600))
        #expect(second.disposition == .new && second.campaign == "daily-2025-11-22" && second.id != first.id)
        try s.run(second).ingest(batch([1, 2, 3]))
        try s.run(second).markIngestComplete()
        #expect(try s.run(second).reload().duplicates == 0)
        #expect(try s.run(second).recipientCount() == 3 && s.run(first).recipientCount() == 2)
        #expect(try s.run(second).claim(limit: 10).count == 3, "claims only this run's recipients")
        #expect(try s.run(first).statusCounts() == [.pending: 2])
        try s.run(second).finish()
        // A fixed name with --new-run starts again too.
        let plain = try StateStore(path: dir.file("plain.sqlite"))
        let p1 = try plain.openRun(campaign: CampaignName("plain"))
        try plain.run(p1).finish()
        #expect(try plain.openRun(campaign: CampaignName("plain")).disposition == .finished)
        let p2 = try plain.openRun(campaign: CampaignName("plain"), newRun: true)
        #expect(p2.disposition == .new && p2.id != p1.id)
        #expect(try plain.runs().map(\.id) == [p1.id, p2.id])
    }

    @Test func aChangedAudienceIsReadAgainByTokenIdentity() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        let r = s.run(run)
        let v1 = [AudienceFingerprint(name: "a.csv", path: "/x/a.csv", size: 10, mtime: 1, sha256: "aa")]
        try r.recordAudienceFiles(v1)
        try r.ingest(batch([1, 2, 3, 4], line: 5))
        try r.markIngestComplete()
        let c = try r.claim(limit: 2)  // 1 and 2 inflight
        try r.record([AttemptOutcome(seq: c[0].seq, status: .sent, httpStatus: 200)])
        // The file changes: 2 (inflight) and 3 (pending) vanish, 5 is new, 1 and 4 stay.
        let v2 = [AudienceFingerprint(name: "a.csv", path: "/x/a.csv", size: 12, mtime: 2, sha256: "bb")]
        try r.startNewAudiencePass(v2)
        let again = try r.reload()
        #expect(again.audiencePass == 2 && !again.ingestComplete && again.rows == 0 && again.ingestedFile == -1)
        #expect(try r.audienceFiles() == v2)
        var b = batch([1, 4, 5, 4], line: 5)
        b.invalid = [InvalidRow(location: RowLocation(file: "a.csv", line: 6), reason: .invalidToken, field: "token", detail: "x")]
        b.rows = 5
        try r.ingest(b, pass: 2)
        try r.markIngestComplete(pass: 2)
        let done = try r.reload()
        #expect(done.newRecipients == 1 && done.vanishedRecipients == 2 && done.audienceChanged)
        #expect(done.rows == 5 && done.duplicates == 1, "a token twice in the new pass is a duplicate; a token from the earlier pass is not")
        var byToken: [String: DeliveryRow] = [:]
        try r.forEachDelivery { byToken[$0.token] = $0 }
        #expect(byToken[token(1).hex]?.status == .sent, "a sent token stays sent and is not sent again")
        #expect(byToken[token(2).hex]?.status == .suppressed && byToken[token(2).hex]?.reason == "vanished_from_audience")
        #expect(byToken[token(3).hex]?.status == .suppressed)
        #expect(byToken[token(4).hex]?.status == .pending && byToken[token(5).hex]?.status == .pending)
        #expect(try r.claim(limit: 10).map(\.token) == [token(4), token(5)])
    }

    /// A changed audience renders the recipients not attempted yet again, but one already attempted
    /// keeps the notification it was first sent (same apns-id, same payload): its resend is the same
    /// notification, and a Live Activity's `timestamp: auto` must not move forward.
    @Test func aChangedAudienceKeepsTheNotificationOfAnAttemptedRecipient() throws {
        let s = try StateStore(path: dir.file("keep.sqlite"))
        let run = try s.openRun(campaign: CampaignName("keep"))
        let r = s.run(run)
        try r.recordAudienceFiles([AudienceFingerprint(name: "a.csv", path: "/x/a.csv", size: 10, mtime: 1, sha256: "aa")])
        var first = IngestBatch()
        first.recipients = [recipient(1), recipient(2)]
        first.rows = 2
        try r.ingest(first)
        try r.markIngestComplete()
        let c = try r.claim(limit: 1)
        try r.record([AttemptOutcome(seq: c[0].seq, status: .retry, httpStatus: 500, reason: "InternalServerError", retryAt: Date())])
        try r.startNewAudiencePass([AudienceFingerprint(name: "a.csv", path: "/x/a.csv", size: 12, mtime: 2, sha256: "bb")])
        var second = IngestBatch()
        second.recipients = [1, 2].map { i in
            var x = recipient(i)
            x.payload = Array(#"{"aps":{"alert":"changed"}}"#.utf8)
            return x
        }
        second.rows = 2
        try r.ingest(second, pass: 2)
        try r.markIngestComplete(pass: 2)
        let claimed = try r.claim(limit: 10, now: Date().addingTimeInterval(60))
        let payloads = Dictionary(uniqueKeysWithValues: claimed.map { ($0.token, String(decoding: $0.payload, as: UTF8.self)) })
        #expect(payloads[token(1)] == #"{"aps":{"alert":"hi"}}"#, "attempted: the notification it was first sent")
        #expect(payloads[token(2)] == #"{"aps":{"alert":"changed"}}"#, "never attempted: the changed audience's")
    }

    /// A state file migrated only up to `migration` and filled by `fill`: what an older herald left.
    /// The connection is closed when this returns, before the file is opened as a `StateStore`.
    func olderStateFile(_ name: String, upTo migration: String, _ fill: (Database) throws -> Void) throws -> String {
        let path = dir.file(name)
        let db = try DatabaseQueue(path: path)
        try StateSchema.migrator.migrate(db, upTo: migration)
        try db.write { try fill($0) }
        return path
    }

    @Test func aVersionOneStateFileIsUpgradedInPlace() throws {
        let path = try olderStateFile("old.sqlite", upTo: "1-initial") { db in
            try db.execute(sql: "INSERT INTO run (run_id, campaign, started_at) VALUES ('r1', 'old', '2026-01-01T00:00:00.000Z')")
            try db.execute(sql: "INSERT INTO recipient (token, file, line, payload, apns_id, status) VALUES ('ab', 'a.csv', 2, x'7b7d', 'id1', 'sent')")
            try db.execute(sql: "INSERT INTO invalid_row (file, line, reason, token_field, detail) VALUES ('a.csv', 3, 'invalid_token', 'token', 'x')")
        }
        let s = try StateStore(path: path)
        let run = try #require(try s.runs().last)
        #expect(run.campaign == "old" && run.audiencePass == 1)
        #expect(try s.run(run).statusCounts() == [.sent: 1])
        #expect(try s.run(run).invalidRowCount() == 1)
        #expect(try StateStore(path: path, readOnly: true).runs().count == 1)
    }

    /// A run interrupted while reading under version 8 (payloads staged whole) and resumed by this
    /// version: the rows staged before keep their payloads as they are, the rows staged after are
    /// kept against a reference, and every claim gets its own payload back.
    @Test func payloadsStagedWholeByAVersionEightFileAreSentAsStaged() throws {
        func payload(_ i: Int) -> [UInt8] { Array(#"{"aps":{"alert":"Your order \#(i) has shipped","sound":"default"},"order":"A-\#(i)"}"#.utf8) }
        let path = try olderStateFile("v8.sqlite", upTo: "8-broadcast-runs") { db in
            try db.execute(sql: "INSERT INTO run (run_id, campaign, started_at, ingested_file, ingested_line, rows) VALUES ('r1', 'v8', '2026-01-01T00:00:00.000Z', 0, 3, 2)")
            for i in 1...2 {
                try db.execute(sql: """
                    INSERT INTO audience_row (run, pass, token, file, line, recipient_id, payload, apns_id) VALUES (1, 1, ?, 'a.csv', ?, '', ?, ?)
                    """, arguments: [token(i).hex, i + 1, Data(payload(i)), "id\(i)"])
            }
        }
        let s = try StateStore(path: path)
        let info = try #require(try s.runs().last)
        var b = batch([3, 4, 5], line: 6)
        for i in b.recipients.indices { b.recipients[i].payload = payload(i + 3) }
        try s.run(info).ingest(b)
        try s.run(info).markIngestComplete()
        let kept = try s.read { db in try Int64?.fetchAll(db, sql: "SELECT payload_reference FROM audience_row ORDER BY id") }
        #expect(kept.map { $0 != nil } == [false, false, true, true, true])
        let claimed = try s.run(info).claim(limit: 10)
        #expect(claimed.map(\.token) == (1...5).map { token($0) })
        #expect(claimed.map(\.payload) == (1...5).map { payload($0) })
    }

    @Test func inflightRowsOfAVersionThreeFileArePendingAfterTheUpgrade() throws {
        let path = try olderStateFile("v3.sqlite", upTo: "3-report-columns") { db in
            try db.execute(sql: "INSERT INTO run (run_id, campaign, started_at, ingest_complete) VALUES ('r1', 'v3', '2026-01-01T00:00:00.000Z', 1)")
            for (i, status) in ["sent", "inflight", "pending"].enumerated() {
                try db.execute(sql: """
                    INSERT INTO recipient (run, token, file, line, apns_id, status, attempts, first_attempt_at)
                    VALUES (1, ?, 'a.csv', ?, ?, ?, ?, ?)
                    """, arguments: [token(i + 1).hex, i + 2, "id\(i)", status, status == "pending" ? 0 : 1,
                                     status == "pending" ? nil : "2026-01-01T00:00:01.000Z"])
            }
        }
        let s = try StateStore(path: path)
        let run = s.run(try #require(try s.runs().last))
        // Version 3 counted the attempt when it claimed: the row is pending with it, as its resume made it.
        #expect(try run.statusCounts() == [.sent: 1, .pending: 2])
        try run.recoverInflight()
        let claimed = try run.claim(limit: 10)
        #expect(claimed.map(\.token) == [token(2), token(3)])
        #expect(claimed.map(\.attempts) == [2, 1], "the version-3 claim's attempt was counted once, not again")
    }

    @Test func anAttemptCountsWhenRecordedAtItsClaimTimeAndARetryInFlightIsRecovered() throws {
        let path = dir.file("c.sqlite")
        let s = try StateStore(path: path)
        let info = try s.openRun(campaign: CampaignName("c"))
        let r = s.run(info)
        try r.ingest(batch([1, 2]))
        try r.markIngestComplete()
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        let c = try r.claim(limit: 2, now: t0)
        #expect(c.allSatisfy { $0.claimedAt == t0 && $0.attempts == 1 })
        // Answered later; the attempt is stamped with its claim's time.
        try r.record([AttemptOutcome(seq: c[0].seq, status: .retry, httpStatus: 503, reason: "ServiceUnavailable", retryAt: t0,
                                     attemptedAt: c[0].claimedAt),
                      AttemptOutcome(seq: c[1].seq, status: .sent, httpStatus: 200, attemptedAt: c[1].claimedAt)])
        let t1 = t0.addingTimeInterval(60)
        let retry = try r.claim(limit: 10, now: t1)
        #expect(retry.map(\.token) == [token(1)] && retry[0].attempts == 2, "a due retry is claimed again")
        #expect(try r.claim(limit: 10, now: t1).isEmpty, "a claimed retry is in flight: not claimed twice")
        #expect(try r.statusCounts() == [.inflight: 1, .sent: 1])
        // The process dies; the next one recovers the retry's unknown attempt at its claim's time.
        let other = try StateStore(path: path).run(info)
        try other.recoverInflight(now: t1.addingTimeInterval(3_600))
        var rows: [String: DeliveryRow] = [:]
        try other.forEachDelivery { rows[$0.token] = $0 }
        #expect(rows[token(1).hex]?.status == .pending && rows[token(1).hex]?.attempts == 2)
        #expect(rows[token(1).hex]?.firstAttemptAt == Timestamp.iso(t0) && rows[token(1).hex]?.lastAttemptAt == Timestamp.iso(t1))
        #expect(rows[token(2).hex]?.attempts == 1 && rows[token(2).hex]?.lastAttemptAt == Timestamp.iso(t0))
    }

    @Test func aRecipientRetryingLongerThanGiveUpAfterFailsWithGaveUp() throws {
        let s = try StateStore(path: dir.file("c.sqlite"))
        let run = try s.openRun(campaign: CampaignName("c"))
        let r = s.run(run)
        try r.ingest(batch([1, 2, 3]))
        try r.markIngestComplete()
        let start = Date()
        let c = try r.claim(limit: 2, now: start)
        try r.record([AttemptOutcome(seq: c[0].seq, status: .retry, httpStatus: 503, reason: "ServiceUnavailable", retryAt: start),
                      AttemptOutcome(seq: c[1].seq, status: .sent, httpStatus: 200)])
        #expect(try r.giveUp(olderThan: 86_400, now: start.addingTimeInterval(3_600)) == 0, "not yet")
        #expect(try r.giveUp(olderThan: 86_400, now: start.addingTimeInterval(90_000)) == 1)
        var byToken: [String: DeliveryRow] = [:]
        try r.forEachDelivery { byToken[$0.token] = $0 }
        #expect(byToken[token(1).hex]?.status == .failed && byToken[token(1).hex]?.reason == "gave_up")
        #expect(byToken[token(2).hex]?.status == .sent)
        #expect(byToken[token(3).hex]?.status == .pending, "never attempted: no clock running")
    }

    @Test func readOnlyOpenOfAMissingFileSaysTheCampaignNeverRan() {
        #expect(throws: StateError.self) { try StateStore(path: dir.file("none.sqlite"), readOnly: true) }
        #expect(!FileManager.default.fileExists(atPath: dir.file("none.sqlite")))
    }
}
