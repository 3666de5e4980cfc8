import Foundation
@testable import HeraldOperations
import HeraldState
import Testing

/// The counters the runner ticks and the words the display makes of them.
@Suite struct ProgressTests {
    let t0 = Date(timeIntervalSince1970: 1_000_000)

    @Test func readingShowsPercentOfInputBytesRowsPerSecondAndETA() {
        let p = RunProgress(now: t0)
        p.startReading(totalBytes: 4_000_000, doneBytes: 0, now: t0)
        p.read(bytes: 1_000_000, rows: 50_000)
        let s = p.snapshot
        #expect(s.fraction == 0.25)
        let line = ProgressText.line(s, now: t0.addingTimeInterval(10))
        #expect(line == "reading   25%  1.0 MB/4.0 MB  50,000 rows  5,000 rows/s  ETA 0:30", "\(line)")
    }

    @Test func aResumedReadStartsAtTheFilesAlreadyRead() {
        let p = RunProgress(now: t0)
        p.startReading(totalBytes: 300, doneBytes: 200, now: t0)
        #expect(p.snapshot.fraction.map { ($0 * 1000).rounded() } == 667)
    }

    /// `audience.prescan: false`: sending may start before the reader reports; the total grows as
    /// recipients are recorded, and the share of input read scales the fraction.
    @Test func sendingWhileReadingScalesByTheInputReadAndKeepsTheSendingPhase() {
        let p = RunProgress(now: t0)
        p.startSending(counts: [:], now: t0)
        p.startReading(totalBytes: 1_000, doneBytes: 0, now: t0)
        #expect(p.snapshot.phase == .sending)
        p.addSendWork(100)
        p.read(bytes: 250, rows: 100)
        p.recorded((1...50).map { AttemptOutcome(seq: Int64($0), status: .sent, httpStatus: 200) })
        #expect(p.snapshot.sendTotal == 100)
        #expect(p.snapshot.fraction == 0.125, "half of the quarter read so far")
        p.read(bytes: 1_000, rows: 400)
        p.addSendWork(300)
        #expect(p.snapshot.fraction == 0.125, "50 of 400 once everything is read")
    }

    @Test func sendingCountsAnswersByStatusAndReasonOnTopOfEarlierRuns() {
        let p = RunProgress(now: t0)
        p.startSending(counts: [.pending: 90, .retry: 10, .sent: 900, .failed: 5, .suppressed: 2], now: t0)
        p.recorded([AttemptOutcome(seq: 1, status: .sent, httpStatus: 200),
                    AttemptOutcome(seq: 2, status: .failed, httpStatus: 410, reason: "Unregistered"),
                    AttemptOutcome(seq: 3, status: .retry, reason: "connection_error: Couldn't connect (127.0.0.1:1)"),
                    AttemptOutcome(seq: 4, status: .sent, httpStatus: 200)])
        let s = p.snapshot
        #expect(s.sendTotal == 100 && s.sent == 2 && s.failed == 1 && s.retried == 1 && s.finishedThisRun == 3)
        #expect(s.attemptsByReason[.init(status: "retry", reason: "connection_error")] == 1, "one label value for every connection error")
        #expect(s.attemptsByReason[.init(status: "failed", reason: "Unregistered")] == 1)
        let line = ProgressText.line(s, now: t0.addingTimeInterval(1))
        #expect(line == "sending    3%  3/100  sent 902  failed 6  retried 1  3/s  ETA 0:32", "\(line)")
        let entry = ProgressText.logEntry(s, now: t0.addingTimeInterval(1))
        #expect(entry.message == "progress: sending 3% 3/100 sent 902 failed 6 retried 1 3/s ETA 0:32")
        #expect(entry.fields["sent"] == "902" && entry.fields["failed"] == "6" && entry.fields["percent"] == "3.0" && entry.fields["eta_seconds"] == "32")
    }

    @Test func theLineFitsTheTerminal() {
        let p = RunProgress(now: t0)
        p.startSending(counts: [.pending: 1_000_000], now: t0)
        #expect(ProgressText.line(p.snapshot, now: t0, width: 20).count == 19)
    }

    @Test func durationsAndNumbers() {
        #expect(ProgressText.duration(38) == "0:38" && ProgressText.duration(3 * 3600 + 7 * 60 + 41) == "3:07:41")
        #expect(ProgressText.number(1_234_567) == "1,234,567" && ProgressText.number(999) == "999")
        #expect(ProgressText.bytes(512) == "512 B" && ProgressText.bytes(2_500_000_000) == "2.5 GB")
    }
}
