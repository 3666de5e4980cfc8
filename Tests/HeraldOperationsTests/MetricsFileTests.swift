import Foundation
@testable import HeraldOperations
import HeraldState
import HeraldTestSupport
import Logging
import Testing

/// The Prometheus textfile: format, atomic replacement, mode, and the last success surviving a failure.
@Suite struct MetricsFileTests {
    let dir = TemporaryDirectory("metrics")

    func liveSnapshot() -> RunProgress.Snapshot {
        let p = RunProgress(now: Date(timeIntervalSince1970: 1_000))
        p.startSending(counts: [.pending: 10, .sent: 5], now: Date(timeIntervalSince1970: 1_000))
        p.recorded([AttemptOutcome(seq: 1, status: .sent, httpStatus: 200),
                    AttemptOutcome(seq: 2, status: .failed, httpStatus: 400, reason: "BadDeviceToken")])
        return p.snapshot
    }

    /// `name{labels} value` lines, every sample preceded by its HELP and TYPE.
    func samples(_ text: String) throws -> [String: Double] {
        var out: [String: Double] = [:]
        var typed = Set<String>()
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") { typed.insert(String(line.split(separator: " ")[2])); continue }
            if line.hasPrefix("#") { continue }
            // The value follows the last space (label values may contain spaces).
            let space = try #require(line.lastIndex(of: " "))
            let series = String(line[..<space])
            let name = String(series.prefix { $0 != "{" })
            #expect(typed.contains(name), "\(name) has no # TYPE")
            #expect(Double(line[line.index(after: space)...]) != nil, "\(line)")
            out[series] = Double(line[line.index(after: space)...])
        }
        return out
    }

    @Test func liveCountersByStatusAndReasonWithShardLabels() throws {
        let path = dir.file("herald.prom")
        let m = MetricsFile(path: path, campaign: "spring \"sale\"", shard: try Shard(text: "1/4"))
        try m.write(liveSnapshot(), now: Date(timeIntervalSince1970: 1_010))
        let s = try samples(try String(contentsOfFile: path, encoding: .utf8))
        let l = #"campaign="spring \"sale\"",shard="1",shards="4""#
        #expect(s["herald_attempts_total{\(l),status=\"failed\",reason=\"BadDeviceToken\"}"] == 1)
        #expect(s["herald_attempts_total{\(l),status=\"sent\",reason=\"\"}"] == 1)
        #expect(s["herald_recipients{\(l),status=\"sent\"}"] == 6)
        #expect(s["herald_recipients{\(l),status=\"pending\"}"] == 8)
        #expect(s["herald_run_in_progress{\(l)}"] == 1)
        #expect(s["herald_run_duration_seconds{\(l)}"] == 10)
        #expect(s.keys.filter { $0.hasPrefix("herald_last_success") }.isEmpty, "no success yet")
        // Readable by the collector's user; no temporary file left for the collector to trip on.
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o644)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["herald.prom"])
    }

    @Test func theLastSuccessSurvivesALaterFailure() throws {
        let path = dir.file("herald.prom")
        let m = MetricsFile(path: path, campaign: "c", shard: nil)
        try m.write(liveSnapshot(), final: MetricsFile.Final(summary: nil, exitCode: 0), now: Date(timeIntervalSince1970: 2_000))
        try m.write(liveSnapshot(), final: MetricsFile.Final(summary: nil, exitCode: 4), now: Date(timeIntervalSince1970: 3_000))
        let s = try samples(try String(contentsOfFile: path, encoding: .utf8))
        #expect(s["herald_last_success_timestamp_seconds{campaign=\"c\"}"] == 2_000)
        #expect(s["herald_last_exit_code{campaign=\"c\"}"] == 4)
        #expect(s["herald_last_update_timestamp_seconds{campaign=\"c\"}"] == 3_000)
        #expect(s["herald_run_in_progress{campaign=\"c\"}"] == 0)
    }

    /// The last success is carried from one file to the next by reading it back: a time a hair
    /// past a whole second (written "2000.000" before) must read back as the same text.
    @Test func theLastSuccessReadsBackAsWritten() throws {
        let path = dir.file("hair.prom")
        let m = MetricsFile(path: path, campaign: "c", shard: nil)
        try m.write(liveSnapshot(), final: MetricsFile.Final(summary: nil, exitCode: 0), now: Date(timeIntervalSince1970: 2_000.0002))
        let line = { (text: String) in text.split(separator: "\n").first { $0.hasPrefix("herald_last_success_timestamp_seconds") } }
        let first = line(try String(contentsOfFile: path, encoding: .utf8))
        try m.write(liveSnapshot(), final: MetricsFile.Final(summary: nil, exitCode: 75), now: Date(timeIntervalSince1970: 3_000))
        #expect(first == "herald_last_success_timestamp_seconds{campaign=\"c\"} 2000")
        #expect(line(try String(contentsOfFile: path, encoding: .utf8)) == first)
        #expect(PrometheusText.number(1.5) == "1.500" && PrometheusText.number(-0.0001) == "-0")
    }

    @Test func anUnwritableDirectoryIsAnErrorNamingThePath() {
        let m = MetricsFile(path: dir.file("missing/dir/herald.prom"), campaign: "c", shard: nil)
        #expect(throws: MetricsError.self) { try m.write(liveSnapshot()) }
        do { try m.write(liveSnapshot()) } catch { #expect(error.description.contains("missing/dir/herald.prom")) }
    }
}

/// The ticker rewrites the metrics file while the run goes, before the final write.
@Suite struct ProgressTickerTests {
    @Test func theMetricsFileIsWrittenPeriodicallyDuringTheRun() throws {
        let dir = TemporaryDirectory("ticker")
        let path = dir.file("run.prom")
        let progress = RunProgress()
        progress.startSending(counts: [.pending: 4])
        let ticker = ProgressTicker(progress: progress, mode: .never, logInterval: 60, logger: Logger(label: "test"),
                                    metrics: MetricsFile(path: path, campaign: "c", shard: nil), metricsInterval: 1)
        ticker.start()
        func contents() -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        var text = ""
        waitUntil(timeout: 4) { text = contents(); return !text.isEmpty }
        progress.recorded([AttemptOutcome(seq: 1, status: .sent, httpStatus: 200)])
        // The ticker writes every second (metricsInterval: 1): the next write has the new counts.
        let sent = "herald_recipients{campaign=\"c\",status=\"sent\"} 1\n"
        var later = ""
        waitUntil(timeout: 5) { later = contents(); return later.contains(sent) }
        ticker.stop()
        #expect(text.contains("herald_run_in_progress{campaign=\"c\"} 1\n"), "\(text)")
        #expect(later.contains(sent), "rewritten with the new counts: \(later)")
    }
}
