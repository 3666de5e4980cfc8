import Foundation
import HeraldCore
import HeraldState
import HeraldTestSupport

/// A real state file with a run of known outcomes: 3 sent, 1 Unregistered, 1 BadDeviceToken,
/// 1 pending, 1 invalid row.
struct ReportFixture {
    let dir: TemporaryDirectory
    let store: StateStore
    let run: RunInfo
    var state: RunState { store.run(run) }

    static func token(_ i: Int, prefix: String = "") -> String { prefix + String(format: "%0\(64 - prefix.count)x", i) }

    init(_ dir: TemporaryDirectory, name: String = "c", campaign: String = "c", offset: Int = 0) throws {
        self.dir = dir
        store = try StateStore(path: dir.file("state/\(name).sqlite"))
        run = try store.openRun(campaign: CampaignName(campaign))
        var b = IngestBatch()
        let tokens = (1...3).map { Self.token($0 + offset) } + [Self.token(4 + offset, prefix: "dead"), Self.token(5 + offset, prefix: "badd"), Self.token(6 + offset)]
        for (i, t) in tokens.enumerated() {
            b.recipients.append(IngestBatch.Recipient(
                token: try DeviceToken.normalize(t).get(), location: RowLocation(file: "a, \"b\".csv", line: i + 2), recipientId: "u\(i + offset)",
                payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8), apnsId: "00000000-0000-5000-8000-\(String(format: "%012x", i + offset))"))
        }
        b.invalid = [InvalidRow(location: RowLocation(file: "a.csv", line: 9), reason: .invalidToken, field: "token", detail: "x")]
        b.rows = tokens.count + 1
        try store.run(run).ingest(b)
        try store.run(run).markIngestComplete()
        let claimed = try store.run(run).claim(limit: 5)
        var outcomes: [AttemptOutcome] = []
        for (i, c) in claimed.enumerated() {
            switch i {
            case 0..<3: outcomes.append(AttemptOutcome(seq: c.seq, status: .sent, httpStatus: 200, responseApnsId: c.apnsId,
                                                        apnsUniqueId: "uniq-\(i)", latencyMs: 10 * (i + 1)))
            case 3: outcomes.append(AttemptOutcome(seq: c.seq, status: .failed, httpStatus: 410, reason: "Unregistered",
                                                   invalidatedAt: 1_700_000_000_123, latencyMs: 40))
            default: outcomes.append(AttemptOutcome(seq: c.seq, status: .failed, httpStatus: 400, reason: "BadDeviceToken", latencyMs: 50))
            }
        }
        try store.run(run).record(outcomes)
    }
}
