import Foundation
import HeraldCore
@testable import HeraldReports
import HeraldState
import HeraldTestSupport
import Testing

@Suite struct ReportWriterTests {
    let dir = TemporaryDirectory("reports")

    func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    @Test func writesEveryReportFromTheStateFile() throws {
        let fx = try ReportFixture(dir)
        var c = DeliveryCounters()
        c.connectionsOpened = 2; c.jwtsSigned = 1; c.retries = 4; c.throttleDeferrals = 3
        try fx.state.addCounters(c, seconds: 2.0, exitCode: 4)
        let writer = ReportWriter(directory: dir.file("out"))
        let summary = try writer.write(state: fx.state, campaign: "c", run: fx.run, finishedAt: nil)

        let deliveries = try lines(writer.deliveriesPath)
        #expect(deliveries[0] == "file,line,recipient_id,token,status,http_status,reason,apns_id,attempts,first_attempt_at,last_attempt_at,apns_unique_id,latency_ms,invalidated_at,timezone,due_at,channel_id,variant,rollout,app,environment")
        #expect(deliveries.count == 7)
        #expect(deliveries[1].hasPrefix("\"a, \"\"b\"\".csv\",2,u0,\(ReportFixture.token(1)),sent,200,,"))
        #expect(deliveries[1].hasSuffix(",uniq-0,10,,,,,,,,"), "no schedule: no time zone, no due time; a token, not a channel; no experiment; one app")
        #expect(deliveries[4].hasSuffix(",,40,2023-11-14T22:13:20.123Z,,,,,,,"))
        #expect(deliveries[6].contains(",pending,,,"))

        let ndjson = try lines(fx.dir.file("out/deliveries.ndjson"))
        #expect(ndjson.count == 6)
        let first = try #require(try JSONSerialization.jsonObject(with: Data(ndjson[0].utf8)) as? [String: Any])
        #expect(first["file"] as? String == "a, \"b\".csv" && first["line"] as? Int == 2 && first["latency_ms"] as? Int == 10)
        #expect(first["apns_unique_id"] as? String == "uniq-0" && first["invalidated_at"] is NSNull)
        #expect(Set(first.keys) == Set(ReportWriter.deliveriesColumns), "the NDJSON keys are the CSV columns")
        // docs/reports.md: empty values null (a sent push has no reason), never "".
        #expect(first["status"] as? String == "sent" && first["reason"] is NSNull, "\(first)")
        #expect(!ndjson.contains { $0.contains("\"\"") }, "no empty string in deliveries.ndjson")

        #expect(try lines(fx.dir.file("out/unregistered.csv")) == [
            "token,reason,invalidated_at,recipient_id,file,line,apns_id,app,environment",
            "\(ReportFixture.token(4, prefix: "dead")),Unregistered,2023-11-14T22:13:20.123Z,u3,\"a, \"\"b\"\".csv\",5,00000000-0000-5000-8000-000000000003,,",
        ])
        let rejected = try lines(fx.dir.file("out/rejected-tokens.csv"))
        #expect(rejected.count == 2 && rejected[1].hasPrefix("\(ReportFixture.token(5, prefix: "badd")),BadDeviceToken,400,u4,"))

        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: writer.summaryPath))) as? [String: Any])
        #expect(json["latency_p50_ms"] as? Int == 30 && json["latency_p95_ms"] as? Int == 50 && json["latency_p99_ms"] as? Int == 50)
        #expect(json["retries"] as? Int == 4 && json["connections_opened"] as? Int == 2 && json["jwts_signed"] as? Int == 1
                && json["throttle_deferrals"] as? Int == 3)
        #expect(json["duration_seconds"] as? Double == 2.0 && json["sends_per_second"] as? Double == 1.5 && json["exit_code"] as? Int == 4)
        #expect(json["unregistered"] as? Int == 1 && json["rejected_tokens"] as? Int == 1)
        #expect(summary.count(.sent) == 3 && summary.count(.pending) == 1)
        let html = try String(contentsOfFile: fx.dir.file("out/summary.html"), encoding: .utf8)
        #expect(html.contains("<title>herald report: c</title>") && html.contains("id=\"total-sent\" data-value=\"3\""))
        #expect(!html.contains("http://") || html.contains("xmlns=\"http://www.w3.org/2000/svg\""), "no external assets")
        #expect(!html.contains("src=") && !html.contains("<link") && !html.contains("<script"))

        // Regenerated later: the same bytes (the duration and counters come from the run row).
        let before = try Data(contentsOf: URL(fileURLWithPath: writer.summaryPath))
        let csvBefore = try Data(contentsOf: URL(fileURLWithPath: writer.deliveriesPath))
        try writer.write(state: fx.state, campaign: "c", run: fx.run, finishedAt: nil, ownsDirectory: false)
        #expect(try Data(contentsOf: URL(fileURLWithPath: writer.summaryPath)) == before)
        #expect(try Data(contentsOf: URL(fileURLWithPath: writer.deliveriesPath)) == csvBefore)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: fx.dir.file("out")).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
    }

    /// The written summary counts statuses, reasons and recipients from the rows it streamed
    /// past; the summary without reports asks the state file. Both must agree.
    @Test func writtenSummaryCountsWhatTheStateFileCounts() throws {
        let fx = try ReportFixture(dir)
        let writer = ReportWriter(directory: dir.file("out"))
        let written = try writer.write(state: fx.state, campaign: "c", run: fx.run, finishedAt: nil)
        let asked = try writer.summary(state: fx.state, run: fx.run)
        #expect(written.distinct == asked.distinct && written.distinct == 6)
        #expect(written.byReason == asked.byReason && asked.byReason["BadDeviceToken"] == 1)
        for s in RecipientStatus.allCases { #expect(written.count(s) == asked.count(s), "\(s)") }
        #expect(written.count(.sent) == 3 && written.count(.failed) == 2 && written.count(.pending) == 1)
    }

    @Test func compressWritesGzipThatGzipReadsBackToTheSameReport() throws {
        let fx = try ReportFixture(dir)
        try ReportWriter(directory: dir.file("plain")).write(state: fx.state, campaign: "c", run: fx.run, finishedAt: nil)
        let gz = ReportWriter(directory: dir.file("gz"), compress: true)
        try gz.write(state: fx.state, campaign: "c", run: fx.run, finishedAt: nil)
        #expect(gz.deliveriesPath.hasSuffix("/deliveries.csv.gz"))
        for name in ["deliveries.csv", "deliveries.ndjson"] {
            let unzipped = try ProcessRunner.run("/bin/sh", ["-c", "gzip -dc '\(dir.file("gz/\(name).gz"))'"])
            #expect(unzipped.status == 0, "\(unzipped.stderr)")
            let plain = try String(contentsOfFile: dir.file("plain/\(name)"), encoding: .utf8)
            #expect(unzipped.stdout == plain, "\(name)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.file("gz/deliveries.csv")))
        // The line reader used by --merge reads both.
        let reader = try ReportLineReader(path: dir.file("gz/deliveries.ndjson.gz"))
        var n = 0
        while try reader.next() != nil { n += 1 }
        #expect(n == 6)
    }

    @Test func mergeCombinesShardsAndCountsSharedInvalidRowsOnce() throws {
        let a = try ReportFixture(dir, name: "a")
        let b = try ReportFixture(dir, name: "b", offset: 100)
        try a.state.addCounters({ var c = DeliveryCounters(); c.retries = 1; c.connectionsOpened = 1; return c }(), seconds: 3, exitCode: 0)
        try b.state.addCounters({ var c = DeliveryCounters(); c.retries = 2; c.connectionsOpened = 1; return c }(), seconds: 5, exitCode: 4)
        try ReportWriter(directory: dir.file("r-a")).write(state: a.state, campaign: "c", run: a.run, finishedAt: nil)
        try ReportWriter(directory: dir.file("r-b"), compress: true).write(state: b.state, campaign: "c", run: b.run, finishedAt: nil)
        let merged = try ReportMerger.merge(shardDirs: [dir.file("r-a"), dir.file("r-b")], into: dir.file("merged"))
        #expect(merged.distinct == 12 && merged.count(.sent) == 6 && merged.count(.failed) == 4 && merged.count(.pending) == 2)
        #expect(merged.invalid == 1, "the same unusable row reported by both shards counts once")
        #expect(merged.byReason == ["Unregistered": 2, "BadDeviceToken": 2])
        #expect(merged.figures.counters.retries == 3 && merged.figures.activeSeconds == 5 && merged.exitCode == 4)
        #expect(merged.shardRunIds == [a.run.runId, b.run.runId])
        #expect(try lines(dir.file("merged/deliveries.csv")).count == 13)
        #expect(try lines(dir.file("merged/unregistered.csv")).count == 3)
        #expect(try lines(dir.file("merged/invalid.csv")).count == 2)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("merged/summary.json")))) as? [String: Any])
        #expect((json["counts"] as? [String: Any])?["rows"] as? Int == 13)
        #expect(throws: ReportMerger.MergeError.self) { try ReportMerger.merge(shardDirs: [dir.file("nope")], into: dir.file("m2")) }
    }

    @Test func figuresGiveNearestRankPercentilesAndBoundedSendRateBars() {
        var f = DeliveryFigures()
        for ms in 1...100 { f.latencyHistogram[ms] = 1 }
        #expect(f.latencyPercentile(0.5) == 50 && f.latencyPercentile(0.95) == 95 && f.latencyPercentile(0.99) == 99)
        #expect(DeliveryFigures().latencyPercentile(0.5) == nil)
        for s in Int64(1_000)..<Int64(1_300) { f.sentPerSecond[s] = 10 }
        let rate = try! #require(f.sendRate(maxBars: 60))
        #expect(rate.start == 1_000 && rate.seconds == 5 && rate.counts.count == 60 && rate.counts.allSatisfy { $0 == 50 })
    }

    /// Sends by local hour keep each zone's offset for as long as it holds, and look again on the
    /// other side of a clock change, whatever order the rows come in.
    @Test func sendsByLocalHourFollowClockChanges() {
        var f = DeliveryFigures()
        var reader = AttemptSecondReader()
        // New York falls back at 2026-11-01T06:00Z: 05:30Z is 01:30 EDT, 06:30Z is 01:30 EST, 04:30Z 00:30 EDT.
        for (at, zone) in [("2026-11-01T06:30:00.000Z", "America/New_York"), ("2026-11-01T05:30:00.000Z", "America/New_York"),
                           ("2026-11-01T04:30:00.000Z", "America/New_York"), ("2026-11-01T12:00:00.000Z", "America/New_York"),
                           ("2026-11-01T12:00:00.000Z", "+05:30"), ("2026-11-01T12:00:00.000Z", "Mars/Base")] {
            let row = DeliveryRow(file: "a.csv", line: 2, recipientId: "", token: "ab", status: .sent, httpStatus: 200, reason: "",
                                  apnsId: "x", attempts: 1, firstAttemptAt: at, lastAttemptAt: at, invalidatedAt: nil, timezone: zone)
            f.add(row, attemptSeconds: &reader)
        }
        let hours = try! #require(f.sentByLocalHour)
        #expect(hours[1] == 2 && hours[0] == 1 && hours[7] == 1 && hours[17] == 1, "\(hours)")
        #expect(hours.reduce(0, +) == 5, "an unknown zone counts in no hour")
    }

    /// The send-rate figure parses each sent row's attempt time once per distinct text: a cached
    /// second must never outlive its text.
    @Test func attemptSecondsFollowTheTextNotTheCache() {
        var reader = AttemptSecondReader()
        func second(of text: String) -> Int64? { Array(text.utf8).withUnsafeBytes { reader.second(of: $0) } }
        #expect(second(of: "2026-11-22T10:00:01.500Z") == 1_795_341_601)
        #expect(second(of: "2026-11-22T10:00:01.500Z") == 1_795_341_601)
        #expect(second(of: "2026-11-22T10:00:02.000Z") == 1_795_341_602)
        #expect(second(of: "not a time") == nil)
        #expect(second(of: "2026-11-22T10:00:01.999Z") == 1_795_341_601)
    }

    @Test func summaryPageEscapesWhatItShows() {
        let s = Summary(campaign: "<script>x</script>", runId: "r", startedAt: "t", finishedAt: nil, rows: 1, valid: 1, distinct: 1,
                        invalid: 0, duplicates: 0, byStatus: [.pending: 1], byReason: ["HTTP 418 & <b>": 1], invalidByReason: [:],
                        extra: SummaryExtras())
        let html = SummaryPage.html(s)
        #expect(!html.contains("<script>") && html.contains("&lt;script&gt;x&lt;/script&gt;"))
        #expect(html.contains("HTTP 418 &amp; &lt;b&gt;"))
        #expect(html.contains("Not finished"))
    }
}
