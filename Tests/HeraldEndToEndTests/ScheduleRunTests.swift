import Foundation
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `schedule` on the built `herald run`, with windows built from the test's own clock (the binary
/// has no clock override): recipients whose local window is open are sent at once, the others
/// when theirs opens; `wait: false` exits 4 naming when, `wait: true` stays up for it, a SIGKILL
/// while waiting loses nothing, and one waiting run sends every window in turn. The simulator's
/// log is the truth.
@Suite(.serialized) struct ScheduleRunTests {
    let dir = TemporaryDirectory("e2e-schedule")

    static func hhmm(_ t: TimeInterval) -> String {
        var seconds = time_t(t)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%02d:%02d", parts.tm_hour, parts.tm_min)
    }

    /// 20 recipients: odd rows in +00:01 (their clock a minute ahead of UTC: the window is open),
    /// even rows in UTC (it opens at `opens`), one row in a zone that does not exist.
    func job(_ name: String, opens: TimeInterval, wait: Bool) throws -> JobFile {
        var rows = ["token,tz"]
        for i in 1...20 { rows.append(String(format: "%064x,%@", i, i % 2 == 1 ? "+00:01" : "UTC")) }
        rows.append(String(format: "%064x,Mars/Olympus_Mons", 99))
        try dir.write("data/\(name).csv", rows.joined(separator: "\n") + "\n")
        return try scheduled(name, schedule: "{ local_time: { from: \"\(Self.hhmm(opens))\", to: \"\(Self.hhmm(opens + 1800))\" }, wait: \(wait) }") {
            $0.audience.timezoneField = "tz"
        }
    }

    /// A job reading data/<file or name>.csv (the test writes it) on `schedule`.
    func scheduled(_ name: String, file: String? = nil, schedule: String?, _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TestJob(name) {
            $0.audience.files = ["../data/\(file ?? name).csv"]
            $0.schedule = schedule
            configure(&$0)
        }.write(in: dir)
    }

    /// `2026-12-01T09:00:00.000Z`, as reports write times.
    enum RegistrationTimeText {
        static func iso(_ t: TimeInterval) -> String {
            let f = ISO8601DateFormatter()
            f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return f.string(from: Date(timeIntervalSince1970: t))
        }
    }

    let herald = Herald()

    /// (token, time_ms) in the order the simulator answered.
    func answered(_ name: String) throws -> [(token: Int, ms: Double)] {
        let path = dir.file("out/\(name).ndjson")
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { line in
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return (Int(o["token"] as! String, radix: 16)!, (o["time_ms"] as! NSNumber).doubleValue)
        }
    }

    @Test func eachZoneIsSentWhenItsWindowOpensAcrossExit4AndASigkillWhileWaiting() throws {
        // The next minute boundary at least 8 s away: the UTC rows' window opens then. The +00:01
        // rows' window opened a minute earlier, so it is open only once that boundary is under a
        // minute away: when it is not yet (8 s in every 60), wait until it is.
        let opens = ((Date().timeIntervalSince1970 + 8) / 60).rounded(.up) * 60
        let early = opens - Date().timeIntervalSince1970 - 59
        if early > 0 { Thread.sleep(forTimeInterval: early) }
        let name = "sched"
        var path = try job(name, opens: opens, wait: false)
        // Beside it, one run with wait: true of another campaign sends both windows, in order.
        let waiting = try herald.start(["run", try job("sched-wait", opens: opens, wait: true).path])
        // And a third, stopped by SIGTERM while it waits: exit 4 at once, resumable.
        let stopped = try herald.start(["run", try job("sched-term", opens: opens, wait: true).path], watch: .stderr)
        _ = try stopped.waitForLine(containing: "wait for their local window")
        kill(stopped.pid, SIGTERM)
        stopped.process.waitUntilExit()
        #expect(stopped.process.terminationStatus == 4)
        #expect(Date().timeIntervalSince1970 < opens, "it stopped without waiting for the window")
        #expect(try answered("sched-term").count == 10)

        // wait: false — the open window is sent, the run exits 4 saying when the rest are due.
        var r = try herald.run(path)
        #expect(r.status == 4, "\(r.stdout)\(r.stderr)")
        let due = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: opens))
        #expect(r.stderr.contains("10 recipient(s) wait for their local window (schedule.wait: false); the next are due at \(due)"), "\(r.stderr)")
        #expect(try answered(name).map(\.token).sorted() == Array(stride(from: 1, through: 19, by: 2)))
        #expect(r.stdout.contains("invalid   bad_field_value 1"), "an unknown zone is an invalid row: \(r.stdout)")
        let invalid = try String(contentsOfFile: dir.file("reports/\(name)/invalid.csv"), encoding: .utf8)
        #expect(invalid.contains(",22,bad_field_value,tz"), "\(invalid)")

        let preview = try herald(["preview", path.path, "--row", "3"])
        #expect(preview.stdout.contains("schedule  UTC · due \(due)"), "\(preview.stdout)")
        let partial = try JSON.object(dir.file("reports/\(name)/summary.json"))
        #expect(partial["next_due_at"] as? String == RegistrationTimeText.iso(opens), "\(partial["next_due_at"] ?? "none")")
        let status = try herald(["status", path.path])
        #expect(status.stdout.contains("waiting   10 for their local window; the next due at \(due)"), "\(status.stdout)")
        #expect(status.stdout.contains("10 scheduled"), "\(status.stdout)")

        // A rerun before the window sends nothing more.
        r = try herald.run(path)
        let afterRerun = try answered(name).count
        #expect(r.status == 4 && afterRerun == 10, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("nothing sent by this one") && !r.stdout.contains("sends/s"), "no earlier run's rate as its own: \(r.stdout)")

        // wait: true — the run stays up for the window; killed while it waits, nothing is lost.
        path = try job(name, opens: opens, wait: true)
        let p = try herald.start(["run", path.path, "--log-level", "notice"], watch: .stderr)
        let line = try p.waitForLine(containing: "wait for their local window")
        #expect(line.contains("10 recipient(s) wait for their local window; the next are due at \(due) (schedule.wait: true)"), "\(line)")
        p.kill9()
        let whileWaiting = try answered(name).count
        #expect(whileWaiting == 10, "nothing sent while waiting")
        #expect(Date().timeIntervalSince1970 < opens, "killed before the window opened")

        // The rerun waits for the window, sends the UTC rows once, after it opened, and finishes.
        r = try herald.run(path)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let all = try answered(name)
        #expect(all.map(\.token).sorted() == Array(1...20), "everyone once")
        let late = all.filter { $0.token % 2 == 0 }
        #expect(late.allSatisfy { $0.ms >= opens * 1000 }, "the UTC rows went after their window opened")

        // deliveries.ndjson says each recipient's zone and due time.
        var rows: [Int: [String: Any]] = [:]
        for line in try String(contentsOfFile: dir.file("reports/\(name)/deliveries.ndjson"), encoding: .utf8).split(separator: "\n") {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            rows[Int(o["token"] as! String, radix: 16)!] = o
        }
        let dueText = RegistrationTimeText.iso(opens)
        #expect(rows[2]?["timezone"] as? String == "UTC" && rows[2]?["due_at"] as? String == dueText, "\(rows[2] ?? [:])")
        #expect(rows[1]?["timezone"] as? String == "+00:01" && rows[1]?["due_at"] is String, "\(rows[1] ?? [:])")

        let summary = try JSON.object(dir.file("reports/\(name)/summary.json"))
        #expect(summary["next_due_at"] is NSNull)
        let hours = try #require(summary["sends_by_local_hour"] as? [Int])
        #expect(hours.count == 24 && hours.reduce(0, +) == 20, "\(hours)")
        let page = try String(contentsOfFile: dir.file("reports/\(name)/summary.html"), encoding: .utf8)
        #expect(page.contains("<table id=\"zones\">") && page.contains("<tr><td>UTC</td><td class=\"num\">10</td><td class=\"num\">10</td></tr>")
                && page.contains("<tr><td>+00:01</td><td class=\"num\">10</td><td class=\"num\">10</td></tr>"), "the table by time zone")
        #expect(page.contains("<table id=\"local-hours\">"))
        let opened = "\(Self.hhmm(opens)):00 UTC: the local window of 10 recipient(s) opened"
        #expect(page.contains("<line class=\"window\"") && page.contains(opened), "the UTC rows' window over the send rate")

        waiting.process.waitUntilExit()
        #expect(waiting.process.terminationStatus == 0)
        let one = try answered("sched-wait")
        #expect(one.map(\.token).sorted() == Array(1...20))
        #expect(one.prefix(10).allSatisfy { $0.token % 2 == 1 } && one.suffix(10).allSatisfy { $0.token % 2 == 0 }, "the open window first")
        #expect(one.suffix(10).allSatisfy { $0.ms >= opens * 1000 })
    }

    /// No push starts after its window closes, even one claimed inside it and queued behind a
    /// server that allows two streams and answers in 200 ms (about 10 pushes a second for a queue
    /// of up to 200, 20 seconds of pushes): a connection that comes to it after the boundary hands it back unstarted, and
    /// it waits for the next window. The simulator logs each request as it arrives.
    @Test func noPushStartsAfterTheWindowClosesFromTheQueue() throws {
        // The window closes at the next minute boundary, 4 to 5 seconds after the run starts.
        var closes = ((Date().timeIntervalSince1970 + 5) / 60).rounded(.up) * 60
        let early = closes - Date().timeIntervalSince1970 - 5
        if early > 0 { Thread.sleep(forTimeInterval: early) }
        closes = ((Date().timeIntervalSince1970 + 3) / 60).rounded(.up) * 60
        let name = "edge"
        try dir.write("data/\(name).csv", "token\n" + (1...400).map { String(format: "%064x", $0) }.joined(separator: "\n") + "\n")
        let path = try scheduled(name, schedule: "{ local_time: { from: \"\(Self.hhmm(closes - 60))\", to: \"\(Self.hhmm(closes))\" }, wait: false }") {
            $0.apns.connections = 1
            $0.apns.streamsPerConnection = 100
            $0.apns.simulator.latencyMs = 200
            $0.apns.simulator.maxConcurrentStreams = 2
        }
        let r = try herald.run(path)
        #expect(r.status == 4, "the rest wait for tomorrow's window: \(r.stdout)\(r.stderr)")
        let sent = try answered(name)
        #expect(!sent.isEmpty && sent.count < 400, "\(sent.count) sent")
        // The in-process simulator logs a request when its event loop reads it: on a loaded machine
        // that can trail the write by some hundreds of milliseconds. A push taken from the queue
        // after the boundary would arrive up to 20 seconds later.
        let late = sent.filter { $0.ms >= closes * 1000 + 1500 }
        #expect(late.isEmpty, "\(late.count) of \(sent.count) arrived after the window closed, the last \(((late.last?.ms ?? 0) - closes * 1000)) ms late")
        let status = try herald(["status", path.path])
        #expect(status.stdout.contains("\(400 - sent.count) for their local window"), "nobody lost: \(status.stdout)")
    }

    /// A daily campaign (`{date}` in its name, `local_time` without `date`) sends each zone the
    /// span that starts within its UTC day. A zone whose span of the day has already closed when
    /// the run starts is `window_missed` for this day's campaign, not sent tomorrow by it (where
    /// tomorrow's campaign would find it due again: two digests on one local day); so the
    /// campaign finishes today, and tomorrow's can start.
    @Test func aDailyCampaignKeepsToItsOwnDay() throws {
        // Both spans start after today's UTC midnight: the closed one 20 minutes ago.
        let midnight = (Date().timeIntervalSince1970 / 86_400).rounded(.down) * 86_400
        let early = midnight + 21 * 60 - Date().timeIntervalSince1970
        if early > 0 { Thread.sleep(forTimeInterval: early) }
        let now = Date().timeIntervalSince1970
        // The same clock times in two zones: UTC's span was 20 to 10 minutes ago; at -00:15 it runs
        // from 5 minutes ago to 5 minutes from now.
        try dir.write("data/daily.csv", "token,tz\n" + (1...6).map { String(format: "%064x,%@", $0, $0 <= 3 ? "UTC" : "-00:15") }.joined(separator: "\n") + "\n")
        let path = try scheduled("daily", schedule: "{ local_time: { from: \"\(Self.hhmm(now - 1200))\", to: \"\(Self.hhmm(now - 600))\" }, wait: false }") { $0.campaign = "daily-{date}"; $0.audience.timezoneField = "tz" }
        let r = try herald.run(path)
        #expect(r.status == 0, "finished today: \(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("3 throttled") && r.stdout.contains("window_missed 3"), "\(r.stdout)")
        #expect(try answered("daily").map(\.token).sorted() == [4, 5, 6])
    }

    /// `wait: false` names when the last zone's window opens too: a cron line must reach it.
    @Test func waitFalseNamesTheLastZoneToOpen() throws {
        let opens = ((Date().timeIntervalSince1970 + 7200) / 60).rounded(.up) * 60
        try dir.write("data/last.csv", "token,tz\n" + (1...4).map { String(format: "%064x,%@", $0, $0 <= 2 ? "UTC" : "-01:30") }.joined(separator: "\n") + "\n")
        let path = try scheduled("last", schedule: "{ local_time: { from: \"\(Self.hhmm(opens))\", to: \"\(Self.hhmm(opens + 1800))\" }, wait: false }") { $0.audience.timezoneField = "tz" }
        let r = try herald.run(path)
        let first = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: opens))
        let last = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: opens + 5400))
        #expect(r.status == 4, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("4 recipient(s) wait for their local window (schedule.wait: false); the next are due at \(first) (the last at \(last)): rerun then"),
                "\(r.stderr)")
    }

    /// The example job in jobs/ loads and its audience is valid.
    @Test func theExampleDigestJobIsValid() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let r = try herald(["validate", root.appendingPathComponent("jobs/daily-digest.yaml").path])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("24 valid"), "\(r.stdout)")
    }

    /// A window that has passed on its `date` in the recipients' zones, or that opens after the
    /// absolute deadline, is never sent: throttled, `window_missed`, and the campaign finishes.
    /// (A date over in every zone is refused before the run: UnsentCampaignTests.)
    @Test func aWindowThatCannotOpenIsMissed() throws {
        // Today in UTC+14:00, 00:00–00:01: over there (but in that first minute), still ahead at UTC−14:00.
        var t = time_t(Date().timeIntervalSince1970 + 14 * 3600)
        var parts = tm()
        gmtime_r(&t, &parts)
        if parts.tm_hour == 0 && parts.tm_min == 0 { Thread.sleep(forTimeInterval: Double(61 - parts.tm_sec)) }
        t = time_t(Date().timeIntervalSince1970 + 14 * 3600)
        gmtime_r(&t, &parts)
        let today = String(format: "%04d-%02d-%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday)
        try dir.write("data/missed.csv", "token,tz\n" + (1...4).map { String(format: "%064x,%@", $0, $0 <= 2 ? "Pacific/Kiritimati" : "+14:00") }.joined(separator: "\n") + "\n")
        let path = try scheduled("missed", schedule: "{ local_time: { from: \"00:00\", to: \"00:01\" }, date: \(today) }") { $0.audience.timezoneField = "tz" }
        let r = try herald.run(path)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("4 throttled") && r.stdout.contains("window_missed 4"), "\(r.stdout)")
        #expect(try answered("missed").isEmpty)
        let csv = try String(contentsOfFile: dir.file("reports/missed/deliveries.csv"), encoding: .utf8)
        #expect(csv.contains(",throttled,,window_missed,") && csv.contains(",Pacific/Kiritimati,,,,,,\n") && csv.contains(",+14:00,,,,,,\n"), "\(csv)")
    }

    /// `quiet_hours` hold retries too: a recipient whose first attempt failed in a run without quiet
    /// hours is not retried while they are on, in either `wait` mode, and goes once they end.
    @Test func theQuietHoursHoldARetry() throws {
        let now = Date().timeIntervalSince1970
        try dir.write("data/quiet.csv", "token\n" + (1...6).map { String(format: "%064x", $0) }.joined(separator: "\n") + "\n")
        func job(_ name: String, flaky: Bool = false, schedule: String? = nil) throws -> JobFile {
            try scheduled(name, file: "quiet", schedule: schedule) {
                if flaky { $0.apns.simulator.flaky = [.init(prefix: String(format: "%064x", 3), count: 1, status: 503)] }
                $0.retry.maxAttempts = 1
            }
        }
        func quiet(until end: TimeInterval, wait: Bool) -> String {
            "{ quiet_hours: { from: \"\(Self.hhmm(now - 120))\", to: \"\(Self.hhmm(end))\" }, wait: \(wait) }"
        }
        // Two campaigns, each without quiet hours at first: token 3 answers 503 once and has no
        // attempt left in that run.
        for name in ["quiet", "quiet-wait"] {
            let r = try herald.run(try job(name, flaky: true))
            #expect(r.status == 4, "\(r.stdout)\(r.stderr)")
            #expect(try answered(name).map(\.token).sorted() == Array(1...6))
        }
        Thread.sleep(forTimeInterval: 1.5)   // past the 503's backoff: the retries are due

        // Quiet hours on now, ending in ten minutes: wait: false holds the retry and says until when.
        let later = ((now + 600) / 60).rounded(.down) * 60
        let laterText = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: later))
        let r = try herald.run(try job("quiet", schedule: quiet(until: later, wait: false)))
        #expect(r.status == 4, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("1 retried recipient(s) held by schedule.quiet_hours (schedule.wait: false); the first may go at \(laterText): rerun then"),
                "\(r.stderr)")
        #expect(try answered("quiet").count == 6, "nothing sent in the quiet hours")
        // wait: true stays up for their end, saying so; SIGTERM ends the wait, exit 4.
        let p = try herald.start(["run", try job("quiet", schedule: quiet(until: later, wait: true)).path], watch: .stderr)
        let line = try p.waitForLine(containing: "held by schedule.quiet_hours")
        #expect(line.contains("1 retried recipient(s) held by schedule.quiet_hours; the first may go at \(laterText) (schedule.wait: true)"), "\(line)")
        kill(p.pid, SIGTERM)
        p.process.waitUntilExit()
        #expect(p.process.terminationStatus == 4)
        #expect(try answered("quiet").count == 6)

        // Quiet hours ending at the next minute boundary at least 5 s away: one waiting run sends
        // the retry once, after they end.
        let soon = ((Date().timeIntervalSince1970 + 5) / 60).rounded(.up) * 60
        let w = try herald.run(try job("quiet-wait", schedule: quiet(until: soon, wait: true)))
        #expect(w.status == 0, "\(w.stdout)\(w.stderr)")
        let all = try answered("quiet-wait")
        #expect(all.count == 7 && all.last?.token == 3, "\(all.map(\.token))")
        #expect((all.last?.ms ?? 0) >= soon * 1000, "the retry went after the quiet hours ended")
    }
}
