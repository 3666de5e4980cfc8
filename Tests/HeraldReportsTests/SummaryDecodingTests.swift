import Foundation
import HeraldCore
@testable import HeraldReports
import HeraldState
import HeraldTestSupport
import Testing

/// summary.json read back into `Summary` (what `herald report --merge` merges).
@Suite struct SummaryDecodingTests {
    let dir = TemporaryDirectory("summary-decoding")

    @Test func aWrittenSummaryReadsBackWithEveryFigureTheMergerUses() throws {
        let fx = try ReportFixture(dir)
        var c = DeliveryCounters()
        c.connectionsOpened = 2; c.jwtsSigned = 1; c.retries = 4; c.throttleDeferrals = 3
        try fx.state.addCounters(c, seconds: 2.5, exitCode: 4)
        let written = try ReportWriter(directory: dir.file("out")).write(state: fx.state, campaign: "c", run: fx.run, finishedAt: nil)

        let read = try Summary(summaryJSON: try #require(FileManager.default.contents(atPath: dir.file("out/summary.json"))))
        #expect(read.campaign == written.campaign && read.runId == written.runId && read.startedAt == written.startedAt)
        #expect(read.finishedAt == nil)
        #expect(read.rows == written.rows && read.valid == written.valid && read.distinct == written.distinct)
        #expect(read.invalid == written.invalid && read.duplicates == written.duplicates)
        for status in RecipientStatus.allCases { #expect(read.count(status) == written.count(status), "\(status)") }
        #expect(read.byReason == written.byReason && read.invalidByReason == written.invalidByReason)
        #expect(read.figures.counters == c)
        #expect(read.figures.activeSeconds == 2.5 && read.exitCode == 4)
        #expect(read.audienceChanged == written.audienceChanged && read.newRecipients == written.newRecipients)
        #expect(read.vanishedRecipients == written.vanishedRecipients)
        let rate = try #require(written.sendsPerSecond)
        #expect(abs((read.sendsPerSecond ?? -1) - rate) < 0.05, "sends_per_second is written with one decimal")
    }

    @Test func aSummaryWithoutItsCountsIsRefusedNamingTheKey() throws {
        let text = #"{"campaign":"c","run_id":"r","started_at":"2026-01-01T00:00:00Z"}"#
        #expect(throws: DecodingError.self) { try Summary(summaryJSON: Data(text.utf8)) }
        do {
            _ = try Summary(summaryJSON: Data(text.utf8))
            Issue.record("a summary without counts was accepted")
        } catch {
            #expect(ReportMerger.decodingProblem(error) == "no counts")
        }
        do {
            _ = try Summary(summaryJSON: Data(#"{"campaign":"c","run_id":"r","started_at":"x","counts":{"sent":"many"}}"#.utf8))
            Issue.record("a count that is not a number was accepted")
        } catch {
            #expect(ReportMerger.decodingProblem(error) == "counts.sent has the wrong type")
        }
    }
}
