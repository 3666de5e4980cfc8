import Foundation
import HeraldTestSupport
import Testing

/// The reports against the simulator's request log, on the built binary: every 200 is a sent row
/// with the same apns-id and apns-unique-id, every rejection has its status and reason, 410s are in
/// unregistered.csv with APNs' timestamp, after a clean run and after a SIGKILL and a resume.
@Suite(.serialized) struct ReportsEndToEndTests {
    let dir = TemporaryDirectory("e2e-reports")

    static func token(_ i: Int, prefix: String = "") -> String { prefix + String(format: "%0\(64 - prefix.count)x", i) }

    let herald = Herald()

    /// A job reading `audience` (`id,token` rows), every row counted however messy.
    func job(_ name: String, audience: String, connections: Int = 1, streams: Int = 20,
             _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TestJob(name) {
            $0.audience.files = [audience]
            $0.audience.idField = "id"
            $0.audience.maxInvalidRows = "100%"
            $0.apns.connections = connections
            $0.apns.streamsPerConnection = streams
            $0.push.template = #"{ aps: { alert: "Hi {{id}}" } }"#
            configure(&$0)
        }.write(in: dir)
    }

    /// 40 good tokens, 3 Unregistered, 2 ExpiredToken, 2 BadDeviceToken, 2 DeviceTokenNotForTopic, 1 invalid row.
    func messyAudience(_ name: String) throws -> String {
        var rows = ["id,token"]
        for i in 1...40 { rows.append("u\(i),\(Self.token(i))") }
        for i in 1...3 { rows.append("dead\(i),\(Self.token(i, prefix: "dead"))") }
        for i in 1...2 { rows.append("exp\(i),\(Self.token(i, prefix: "e0e0"))") }
        for i in 1...2 { rows.append("bad\(i),\(Self.token(i, prefix: "badd"))") }
        for i in 1...2 { rows.append("topic\(i),\(Self.token(i, prefix: "f0f0"))") }
        rows.append("junk,not-a-token")
        return try dir.writeGzip("data/\(name).csv.gz", rows.joined(separator: "\n") + "\n")
    }

    static func messyRules(_ job: inout TestJob) {
        job.apns.simulator.unregisteredPrefixes = ["dead"]
        job.apns.simulator.expiredTokenPrefixes = ["e0e0"]
        job.apns.simulator.badTokenPrefixes = ["badd"]
        job.apns.simulator.notForTopicPrefixes = ["f0f0"]
    }

    @Test func cleanRunReportsMatchTheSimulatorLogExactlyAndReportRegeneratesThem() throws {
        _ = try messyAudience("clean")
        let jobPath = try job("clean", audience: "../data/clean.csv.gz", Self.messyRules)
        let r = try herald.run(jobPath)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let reports = dir.file("reports/clean")
        let log = try SimLog.read(dir.file("out/clean.ndjson"))
        #expect(log.count == 49 && log.values.allSatisfy { $0.count == 1 }, "each distinct token sent once")
        try ReportCheck.matches(reports: reports, log: log)

        let summary = try JSON.object(reports + "/summary.json")
        let counts = try #require(summary["counts"] as? [String: Any])
        #expect(counts["sent"] as? Int == 40 && counts["failed"] as? Int == 9 && counts["invalid"] as? Int == 1)
        #expect(summary["unregistered"] as? Int == 5 && summary["rejected_tokens"] as? Int == 4)
        #expect(summary["by_reason"] as? [String: Int] == ["Unregistered": 3, "ExpiredToken": 2, "BadDeviceToken": 2, "DeviceTokenNotForTopic": 2])
        for key in ["latency_p50_ms", "latency_p95_ms", "latency_p99_ms"] { #expect(summary[key] is Int, "\(key)") }
        #expect(summary["connections_opened"] as? Int == 1 && summary["jwts_signed"] as? Int == 1 && summary["retries"] as? Int == 0)
        #expect(summary["throttle_deferrals"] as? Int == 0 && summary["exit_code"] as? Int == 0)
        #expect((summary["duration_seconds"] as? Double ?? 0) > 0 && (summary["sends_per_second"] as? Double ?? 0) > 0)

        // `herald report` writes the same files again from the state file alone.
        let names = ["deliveries.csv", "deliveries.ndjson", "unregistered.csv", "rejected-tokens.csv", "invalid.csv", "summary.html", "summary.json"]
        let before = try names.map { try Data(contentsOf: URL(fileURLWithPath: reports + "/" + $0)) }
        for name in names { try FileManager.default.removeItem(atPath: reports + "/" + name) }
        let again = try herald(["report", jobPath.path])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        #expect(again.stdout.contains("reports   \(reports)/"))
        let after = try names.map { try Data(contentsOf: URL(fileURLWithPath: reports + "/" + $0)) }
        for (i, name) in names.enumerated() { #expect(before[i] == after[i], "\(name) regenerated identically") }
        #expect(SimLog.lineCount(dir.file("out/clean.ndjson")) == 49, "report sends nothing")

        let usage = try herald(["report", jobPath.path, "--out", "/tmp/x"])
        #expect(usage.status == 2)
    }

    @Test func killedAndResumedRunReportsEveryTokenOnceWithItsLastAnswer() throws {
        var rows = ["id,token"]
        for i in 1...3_000 { rows.append("u\(i),\(Self.token(i, prefix: i % 100 == 0 ? "dead" : ""))") }
        try dir.writeGzip("data/kill.csv.gz", rows.joined(separator: "\n") + "\n")
        let jobPath = try job("kill", audience: "../data/kill.csv.gz", connections: 2, streams: 100) {
            $0.apns.simulator.unregisteredPrefixes = ["dead"]
            $0.reports.dir = "../reports/kill"
            $0.reports.compress = true
        }
        let logPath = dir.file("out/kill.ndjson")
        let p = try herald.start(["run", jobPath.path])
        let seen = SimLog.wait(for: 800, in: logPath) { p.process.isRunning }
        p.kill9()
        #expect(seen >= 800 && seen < 3_000, "killed mid-send (\(seen) answered)")

        let rerun = try herald.run(jobPath)
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        let reports = dir.file("reports/kill")
        #expect(!FileManager.default.fileExists(atPath: reports + "/deliveries.csv"), "compress: only the .gz is written")
        let log = try SimLog.read(logPath)
        #expect(log.count == 3_000)
        try ReportCheck.matches(reports: reports, log: log, gzip: true, resumed: true)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: reports).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
        let summary = try JSON.object(reports + "/summary.json")
        #expect((summary["counts"] as? [String: Any])?["sent"] as? Int == 2_970 && summary["unregistered"] as? Int == 30)
    }

    /// `prescan: false` (sending while reading) applies the list to each batch as it is recorded.
    @Test(arguments: [true, false])
    func suppressionListSkipsDeadTokensInALaterCampaignUnlessTheyRegisteredAgain(prescan: Bool) throws {
        // Campaign one: four tokens answer 410.
        var one = ["id,token"]
        for i in 1...5 { one.append("u\(i),\(Self.token(i))") }
        for i in 1...4 { one.append("d\(i),\(Self.token(i, prefix: "dead"))") }
        try dir.write("data/one.csv", one.joined(separator: "\n") + "\n")
        let first = try herald.run(try job("one", audience: "../data/one.csv") { $0.apns.simulator.unregisteredPrefixes = ["dead"] })
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        let dead = try ReportCheck.csv(dir.file("reports/one/unregistered.csv"))
        #expect(dead.count == 4)
        #expect(FileManager.default.fileExists(atPath: dir.file("state/herald-shared.sqlite")))

        // Campaign two (same environment and topic; the simulator would now accept every token).
        var two = ["id,token,registered_at"]
        two.append("old,\(Self.token(1, prefix: "dead")),2020-01-01T00:00:00Z")   // registered before the 410: suppressed
        two.append("new,\(Self.token(2, prefix: "dead")),4102444800")             // 2100 (epoch seconds): sent again
        two.append("none,\(Self.token(3, prefix: "dead")),")                      // unknown: suppressed
        two.append("junk,\(Self.token(4, prefix: "dead")),last tuesday")          // not a time: invalid row
        two.append("fresh,\(Self.token(77)),1700000000000")
        try dir.write("data/two.csv", two.joined(separator: "\n") + "\n")
        let jobTwo = try job("two", audience: "../data/two.csv") { $0.audience.registeredAtField = "registered_at"; $0.audience.prescan = prescan }
        // `herald validate` refuses the same row the run will.
        let check = try herald(["validate", jobTwo.path, "--json"])
        let checked = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any], "\(check.stdout)")
        #expect((checked["invalid_by_reason"] as? [String: Int]) == ["bad_field_value": 1])
        let second = try herald.run(jobTwo)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        let sent = Set(try SimLog.read(dir.file("out/two.ndjson")).keys)
        #expect(sent == [Self.token(2, prefix: "dead"), Self.token(77)])
        let rows = Dictionary(uniqueKeysWithValues: try ReportCheck.csv(dir.file("reports/two/deliveries.csv")).map { ($0["recipient_id"]!, $0) })
        let oneDead = Dictionary(uniqueKeysWithValues: dead.map { ($0["token"]!, $0["invalidated_at"]!) })
        for id in ["old", "none"] {
            #expect(rows[id]?["status"] == "suppressed" && rows[id]?["reason"] == "suppression_list" && rows[id]?["attempts"] == "0")
            #expect(rows[id]?["invalidated_at"] == oneDead[rows[id]!["token"]!], "the 410 timestamp that suppressed it")
        }
        #expect(rows["new"]?["status"] == "sent" && rows["fresh"]?["status"] == "sent" && rows["junk"] == nil)
        let invalid = try ReportCheck.csv(dir.file("reports/two/invalid.csv"))
        #expect(invalid.count == 1 && invalid[0]["line"] == "5" && invalid[0]["reason"] == "bad_field_value" && invalid[0]["token_field"] == "registered_at")
        let summary = try JSON.object(dir.file("reports/two/summary.json"))
        #expect((summary["counts"] as? [String: Any])?["suppressed"] as? Int == 2)
        #expect((summary["reason_actions"] as? [String: String])?["suppression_list"] == "not_sent")
    }

    @Test func reportBesideARunningCampaignShowsItAsFarAsItGot() throws {
        var rows = ["id,token"]
        for i in 1...300 { rows.append("u\(i),\(Self.token(i))") }
        try dir.write("data/live.csv", rows.joined(separator: "\n") + "\n")
        let jobPath = try job("live", audience: "../data/live.csv", streams: 50)
        let p = try herald.start(["run", jobPath.path], watch: .stderr, environment: ["HERALD_TEST_STALL_AT": "send:2"])
        _ = try p.waitForLine(prefix: "herald-test: stalled at")
        let during = try herald(["report", jobPath.path])
        #expect(during.status == 0, "\(during.stdout)\(during.stderr)")
        #expect(during.stdout.contains("a run is in progress"), "\(during.stdout)")
        let summary = try JSON.object(dir.file("reports/live/summary.json"))
        let counts = try #require(summary["counts"] as? [String: Any])
        // Stalled after its second commit of answers: some sent, the rest not final (the streaming
        // sender commits as answers arrive, so the split is not a fixed batch size).
        let sentSoFar = try #require(counts["sent"] as? Int)
        #expect(sentSoFar > 0 && sentSoFar < 300 && counts["pending"] as? Int == 300 - sentSoFar && summary["finished_at"] is NSNull)
        let live = try ReportCheck.csv(dir.file("reports/live/deliveries.csv"))
        #expect(live.count == 300 && live.filter { $0["status"] == "sent" }.count == sentSoFar)
        p.kill9()
        let rerun = try herald.run(jobPath)
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        try ReportCheck.matches(reports: dir.file("reports/live"), log: try SimLog.read(dir.file("out/live.ndjson")), resumed: true)
    }

    @Test func mergeCombinesShardReportDirectories() throws {
        for k in 0..<2 {
            var rows = ["id,token"]
            for i in 1...20 { rows.append("u\(k)-\(i),\(Self.token(k * 100 + i, prefix: i == 20 ? "dead" : ""))") }
            try dir.write("data/shard\(k).csv", rows.joined(separator: "\n") + "\n")
            let r = try herald.run(try job("shard\(k)", audience: "../data/shard\(k).csv") {
                $0.campaign = "sharded"
                $0.apns.simulator.unregisteredPrefixes = ["dead"]
                $0.state.file = "../state/sharded-shard-\(k)-of-2.sqlite"
                $0.reports.dir = "../reports/sharded-shard-\(k)-of-2"
            })
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        }
        let merged = try herald(["report", "--merge", dir.file("reports/sharded-shard-0-of-2"), dir.file("reports/sharded-shard-1-of-2"),
                              "--out", dir.file("reports/sharded")])
        #expect(merged.status == 0, "\(merged.stdout)\(merged.stderr)")
        let summary = try JSON.object(dir.file("reports/sharded/summary.json"))
        let counts = try #require(summary["counts"] as? [String: Any])
        #expect(counts["sent"] as? Int == 38 && counts["failed"] as? Int == 2 && counts["distinct"] as? Int == 40)
        #expect((summary["shard_run_ids"] as? [String])?.count == 2 && summary["campaign"] as? String == "sharded")
        #expect(try ReportCheck.csv(dir.file("reports/sharded/deliveries.csv")).count == 40)
        #expect(try ReportCheck.csv(dir.file("reports/sharded/unregistered.csv")).count == 2)
        let noOut = try herald(["report", "--merge", dir.file("reports/sharded-shard-0-of-2")])
        #expect(noOut.status == 2 && noOut.stderr.contains("--out"), "\(noOut.stderr)")
    }
}

/// The simulator's request log with what the reports are compared against.
enum SimLog {
    struct Entry { var status: Int; var reason: String?; var timestamp: Int64?; var apnsId: String; var uniqueId: String? }

    static func read(_ path: String) throws -> [String: [Entry]] {
        var out: [String: [Entry]] = [:]
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard let token = o["token"] as? String else { continue }
            out[token, default: []].append(Entry(status: o["status"] as? Int ?? 0, reason: o["reason"] as? String,
                                                 timestamp: (o["timestamp"] as? NSNumber)?.int64Value,
                                                 apnsId: o["apns_id"] as? String ?? "", uniqueId: o["apns_unique_id"] as? String))
        }
        return out
    }

    static func lineCount(_ path: String) -> Int { RequestLog.lineCount(path) }
    static func wait(for count: Int, in path: String, while running: () -> Bool) -> Int { RequestLog.wait(for: count, in: path, while: running) }
}

enum ReportCheck {
    static func text(_ path: String, gzip: Bool) throws -> String { try CSV.text(path, gzip: gzip) }

    static func csv(_ path: String, gzip: Bool = false) throws -> [[String: String]] { try CSV.rows(path, gzip: gzip) }

    static func iso(_ ms: Int64) -> String {
        // Whole seconds by Foundation, milliseconds by integer arithmetic (no float rounding).
        let seconds = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(ms / 1000)))
        return seconds.dropLast() + String(format: ".%03dZ", Int(ms % 1000))
    }

    /// Every token the simulator saw has exactly one row, whose outcome is the token's last answer:
    /// a 200 is `sent` with its apns-id and apns-unique-id; a rejection is `failed` with its status
    /// and reason; 410s are in unregistered.csv with APNs' timestamp; BadDeviceToken and
    /// DeviceTokenNotForTopic in rejected-tokens.csv. deliveries.ndjson holds the same rows.
    /// `resumed`: a request committed in flight may never have left before the kill, so a row can
    /// count one attempt more than the log shows.
    static func matches(reports: String, log: [String: [SimLog.Entry]], gzip: Bool = false, resumed: Bool = false) throws {
        let rows = try csv(reports + "/deliveries.csv", gzip: gzip)
        let byToken = Dictionary(rows.map { ($0["token"]!, $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byToken.count == rows.count, "no token has two rows (no duplicated lines after a resume)")
        #expect(Set(byToken.keys) == Set(log.keys), "a row for every token sent, none for a token never sent")
        var unregistered: [String: String] = [:], rejected: [String: String] = [:]
        for (token, entries) in log {
            let last = entries.last!, row = try #require(byToken[token])
            #expect(Set(entries.map(\.apnsId)).count == 1 && row["apns_id"] == last.apnsId, "\(token)")
            #expect(row["apns_unique_id"] == last.uniqueId && row["http_status"] == String(last.status), "\(token)")
            let attempts = Int(row["attempts"] ?? "") ?? 0
            #expect(Int(row["latency_ms"] ?? "") != nil && (resumed ? attempts >= entries.count : attempts == entries.count), "\(token)")
            if last.status == 200 {
                #expect(row["status"] == "sent" && row["reason"] == "", "\(token)")
            } else {
                #expect(row["status"] == "failed" && row["reason"] == last.reason, "\(token)")
            }
            if last.status == 410 { unregistered[token] = iso(last.timestamp!) }
            if ["BadDeviceToken", "DeviceTokenNotForTopic"].contains(last.reason ?? "") { rejected[token] = last.reason }
            #expect(row["invalidated_at"] == unregistered[token] ?? "", "\(token)")
        }
        let unregisteredRows = try csv(reports + "/unregistered.csv")
        #expect(Dictionary(uniqueKeysWithValues: unregisteredRows.map { ($0["token"]!, $0["invalidated_at"]!) }) == unregistered)
        let rejectedRows = try csv(reports + "/rejected-tokens.csv")
        #expect(Dictionary(uniqueKeysWithValues: rejectedRows.map { ($0["token"]!, $0["reason"]!) }) == rejected)
        let ndjson = try text(reports + "/deliveries.ndjson", gzip: gzip).split(separator: "\n")
        #expect(ndjson.count == rows.count)
        for (line, row) in zip(ndjson, rows) {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(o["token"] as? String == row["token"] && o["status"] as? String == row["status"]
                    && o["apns_unique_id"] as? String == (row["apns_unique_id"]!.isEmpty ? nil : row["apns_unique_id"]))
        }
    }
}
