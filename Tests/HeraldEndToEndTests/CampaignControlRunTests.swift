import Foundation
import HeraldTestSupport
import Testing

/// `herald pause`, `resume` and `cancel` on the built binary against the simulator, from another
/// process while a campaign runs: the run sends nothing it had not claimed before the command,
/// later runs send nothing, resume finishes with every recipient sent once, a cancellation makes
/// the rest `cancelled` everywhere, shards and a run waiting for its window are held too, and a
/// SIGKILL between the command and the run noticing it loses nothing. The simulator's request log
/// is the truth of what was sent.
@Suite(.serialized) struct CampaignControlRunTests {
    let dir = TemporaryDirectory("e2e-control")
    let herald = Herald()

    /// A throttled campaign: it runs long enough for a command to land in the middle.
    func job(_ name: String, count: Int, rate: Int, _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TestJob(name, tokens: tokens(1...count)) {
            $0.throttle.rate = rate
            $0.apns.connections = 2
            $0.apns.streamsPerConnection = 100
            configure(&$0)
        }.write(in: dir)
    }

    /// `herald run` in the background, its output in files; the process and where its stderr goes.
    func runInBackground(_ job: JobFile, _ arguments: [String] = [], tag: String = "run",
                         environment: [String: String?] = [:]) throws -> (Process, String) {
        try FileManager.default.createDirectory(atPath: dir.file("out"), withIntermediateDirectories: true)
        let err = dir.file("out/\(job.job.name)-\(tag).err")
        let p = try herald.spawn(["run", job.path] + arguments, stdout: dir.file("out/\(job.job.name)-\(tag).out"), stderr: err,
                                 environment: environment)
        return (p, err)
    }

    /// Requests the simulator answered 200, by token.
    func accepted(_ job: JobFile) throws -> [String: [RequestLog.Attempt]] {
        try job.requests().mapValues { $0.filter { $0.status == 200 } }.filter { !$0.value.isEmpty }
    }

    /// Requests the simulator answered at or after `time` (UNIX seconds; its log has milliseconds).
    func answered(_ job: JobFile, atOrAfter time: Double) throws -> Int {
        let from = Int((time * 1000).rounded(.down))
        return try job.requestEntries().count { ($0["time_ms"] as? Int).map { $0 >= from } ?? true }
    }

    /// The most recipients a run has claimed and not yet recorded at any moment (SendLoop): its
    /// window on the wire (`connections` × `streams_per_connection`) and two claims of half of it.
    static func claimedAtMost(connections: Int, streams: Int) -> Int {
        let window = connections * streams
        return window + 2 * max(1, min(window / 2, 1_000))
    }

    /// Promptness without a timed bound (speed is for the benchmarks), read off the simulator's log:
    /// once `herald pause` has returned its hold is committed, so no checkpoint claims again
    /// (RunState.commit) and what no connection has started goes back once the run notices
    /// (ControlWatch): only the 20 requests a run of 10 streams can have claimed are answered
    /// afterwards, where one that went on claiming until it noticed sends more as answers free
    /// its streams.
    @Test func aPausedRunSendsOnlyWhatItHadClaimedLaterRunsSendNothingAndResumeFinishesIt() throws {
        let count = 20_000
        let job = try job("pause", count: count, rate: 4_000) {
            $0.apns.connections = 1
            $0.apns.streamsPerConnection = 10
        }
        let (run, err) = try runInBackground(job)
        #expect(waitUntil(timeout: 60) { job.sent >= 2_000 }, "the campaign is under way")

        let pause = try herald(["pause", job.path, "--reason", "wrong text"])
        let returned = Date().timeIntervalSince1970
        #expect(pause.status == 0, "\(pause.output)")
        #expect(pause.stdout.contains("paused by") && pause.stdout.contains("(wrong text)") && pause.stdout.contains("in progress"), "\(pause.stdout)")
        run.waitUntilExit()
        let stderr = try String(contentsOfFile: err, encoding: .utf8)
        #expect(run.terminationStatus == 6, "\(stderr)")
        #expect(stderr.contains("paused by") && stderr.contains("wrong text") && stderr.contains("herald resume"), "\(stderr)")
        let afterPause = try answered(job, atOrAfter: returned)
        #expect(afterPause <= Self.claimedAtMost(connections: 1, streams: 10), "\(afterPause) requests answered after `herald pause` returned")
        let sentBefore = job.sent
        #expect(sentBefore < count, "stopped before the end: \(sentBefore)")
        // Every answer is recorded and the rest stays pending for the resume: nothing in flight.
        let states = try #require((try herald(["status", job.path, "--json"]).json()["runs"] as? [[String: Any]])?.last?["states"] as? [String: Any])
        #expect(states["sent"] as? Int == sentBefore && states["pending"] as? Int == count - sentBefore && states["inflight"] as? Int == 0, "\(states)")

        // A cron tick while paused: exit 6 at once, without reading the audience or sending. The
        // audience is swapped for another one: a run that read it would say it changed.
        let audience = job.resolve("../data/\(job.job.audienceFile)")
        try FileManager.default.moveItem(atPath: audience, toPath: audience + ".away")
        try ("token\n" + tokens(900_001...900_010).joined(separator: "\n") + "\n").write(toFile: audience, atomically: true, encoding: .utf8)
        let tick = try herald.run(job)
        #expect(tick.status == 6, "\(tick.output)")
        #expect(tick.stderr.contains("is paused by") && tick.stderr.contains("nothing sent"), "\(tick.stderr)")
        #expect(!tick.stderr.contains("audience changed"), "the audience was not read: \(tick.stderr)")
        #expect(job.sent == sentBefore)
        let status = try herald(["status", job.path])
        #expect(status.stdout.contains("control   paused by") && status.stdout.contains("(wrong text)"), "\(status.stdout)")
        try FileManager.default.removeItem(atPath: audience)
        try FileManager.default.moveItem(atPath: audience + ".away", toPath: audience)

        let resume = try herald(["resume", job.path])
        #expect(resume.status == 0 && resume.stdout.contains("resumed"), "\(resume.output)")
        let rest = try herald.run(job)
        #expect(rest.status == 0, "\(rest.output)")
        let sent = try accepted(job)
        #expect(sent.count == count, "every recipient")
        #expect(sent.values.allSatisfy { $0.count == 1 }, "each once")
        #expect(try job.counts()["sent"] as? Int == count)
    }

    @Test func aCancelledRunRecordsTheRestAsCancelledEverywhereAndNeverSendsAgain() throws {
        let count = 5_000
        let job = try job("cancel", count: count, rate: 1_000) { $0.events = "{ file: ../out/cancel-events.ndjson }" }
        let (run, err) = try runInBackground(job)
        #expect(waitUntil(timeout: 60) { job.sent >= 1_000 }, "the campaign is under way")
        let cancel = try herald(["cancel", job.path, "--reason", "wrong price"])
        #expect(cancel.status == 0, "\(cancel.output)")
        run.waitUntilExit()
        let stderr = try String(contentsOfFile: err, encoding: .utf8)
        #expect(run.terminationStatus == 6, "\(stderr)")
        #expect(stderr.contains("recorded as cancelled") && stderr.contains("new campaign name"), "\(stderr)")

        let sent = try accepted(job)
        let rows = try job.deliveries()
        #expect(rows.count == count, "the reports list everyone")
        let cancelled = rows.filter { $0["status"] == "cancelled" }
        #expect(cancelled.count == count - sent.count && !cancelled.isEmpty)
        #expect(cancelled.allSatisfy { $0["reason"] == "cancelled: wrong price" && sent[$0["token"]!] == nil }, "only the unsent")
        #expect(rows.filter { $0["status"] == "sent" }.count == sent.count)
        let summary = try job.summary()
        #expect((summary["counts"] as? [String: Any])?["cancelled"] as? Int == cancelled.count)
        let control = try #require(summary["control"] as? [String: Any])
        #expect(control["action"] as? String == "cancelled" && control["reason"] as? String == "wrong price")
        #expect(summary["finished_at"] is String, "every recipient is final")
        let html = try String(contentsOfFile: job.report("summary.html"), encoding: .utf8)
        #expect(html.contains("id=\"control\"") && html.contains("Cancelled by"))
        let events = try JSON.lines(dir.file("out/cancel-events.ndjson"))
        #expect(events.filter { $0["type"] as? String == "cancelled" }.count == cancelled.count, "an event for each")

        // Nothing sends it again: a rerun, --new-run, and resume is refused.
        let sentBefore = job.sent
        for args in [[], ["--new-run"]] {
            let again = try herald.run(job, args)
            #expect(again.status == 6 && again.stderr.contains("cancelled by"), "\(again.output)")
        }
        let resume = try herald(["resume", job.path])
        #expect(resume.status == 2 && resume.stderr.contains("cannot be paused or resumed"), "\(resume.output)")
        #expect(job.sent == sentBefore)
        let status = try herald(["status", job.path, "--json"])
        #expect((try status.json()["control"] as? [String: Any])?["action"] as? String == "cancelled")
    }

    /// Cancelled with no run in progress, before the audience was read: the command records every
    /// recipient as cancelled itself, and writes the reports, without any key or connection.
    @Test func cancellingACampaignThatNeverRanRecordsEveryoneWithoutSending() throws {
        let job = try job("cancel-early", count: 20, rate: 1_000)
        let cancel = try herald(["cancel", job.path])
        #expect(cancel.status == 0, "\(cancel.output)")
        #expect(cancel.stdout.contains("20 cancelled, 0 sent"), "\(cancel.stdout)")
        #expect(job.sent == 0)
        #expect(try job.deliveries().allSatisfy { $0["status"] == "cancelled" && $0["reason"] == "cancelled" })
        #expect(try herald.run(job).status == 6)
    }

    /// A run waiting for its recipients' local window (`schedule.wait: true`) is woken by the pause
    /// and stops, instead of staying up until the window.
    @Test func aRunWaitingForItsWindowStopsWhenPaused() throws {
        let opens = Date().timeIntervalSince1970 + 3 * 3600
        let from = ScheduleRunTests.hhmm(opens), to = ScheduleRunTests.hhmm(opens + 1800)
        let job = try TestJob("waiting", tokens: tokens(1...10)) {
            $0.schedule = "{ local_time: { from: \"\(from)\", to: \"\(to)\" }, wait: true }"
        }.write(in: dir)
        let p = try herald.start(["run", job.path, "--log-level", "notice"], watch: .stderr)
        _ = try p.waitForLine(containing: "wait for their local window")
        let pause = try herald(["pause", job.path])
        #expect(pause.status == 0, "\(pause.output)")
        #expect(waitUntil(timeout: 30) { !p.process.isRunning }, "the waiting run stopped")
        #expect(p.stop() == 6)
        #expect(job.sent == 0)
        #expect(Date().timeIntervalSince1970 < opens)
    }

    /// A sharded campaign (three `herald run --shard k/3`): one `herald pause JOB` holds every
    /// shard's state file; resumed, the shards together send every token once.
    @Test func aPauseHoldsEveryShard() throws {
        let count = 6_000
        let job = try job("shards", count: count, rate: 500)
        let runs = try (0..<3).map { try runInBackground(job, ["--shard", "\($0)/3"], tag: "shard\($0)") }
        #expect(waitUntil(timeout: 60) { job.sent >= 300 }, "the shards are under way")
        let pause = try herald(["pause", job.path])
        #expect(pause.status == 0, "\(pause.output)")
        #expect(pause.stdout.split(separator: "\n").filter { $0.contains("-shard-") && $0.contains("paused by") }.count == 3, "\(pause.stdout)")
        for (p, err) in runs {
            p.waitUntilExit()
            let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
            #expect(p.terminationStatus == 6, "\(stderr)")
        }
        let sentBefore = job.sent
        #expect(sentBefore < count)
        for k in 0..<3 { #expect(try herald.run(job, ["--shard", "\(k)/3"]).status == 6) }
        #expect(job.sent == sentBefore)

        #expect(try herald(["resume", job.path]).status == 0)
        for k in 0..<3 {
            let r = try herald.run(job, ["--shard", "\(k)/3"])
            #expect(r.status == 0, "\(r.output)")
        }
        let sent = try accepted(job)
        #expect(sent.count == count && sent.values.allSatisfy { $0.count == 1 }, "every token once across the shards")
    }

    /// kill -9 after the pause is committed and before the run acted on it (the run stalled at a
    /// checkpoint): the pause holds the next run, and resumed, the campaign finishes with each
    /// recipient's one notification (a resend of an unknown outcome keeps its apns-id).
    @Test func aSigkillBetweenThePauseAndItsObservationLosesNothing() throws {
        let count = 2_000
        let job = try job("killed", count: count, rate: 2_000)
        let stalled = try herald.start(["run", job.path], watch: .stderr, environment: ["HERALD_TEST_STALL_AT": "send:3"])
        _ = try stalled.waitForLine(prefix: "herald-test: stalled")
        #expect(try herald(["pause", job.path]).status == 0)
        stalled.kill9()
        let sentBefore = job.sent

        let tick = try herald.run(job)
        #expect(tick.status == 6, "\(tick.output)")
        #expect(job.sent == sentBefore, "nothing sent while paused")
        #expect(try herald(["resume", job.path]).status == 0)
        let rest = try herald.run(job)
        #expect(rest.status == 0, "\(rest.output)")
        let sent = try accepted(job)
        #expect(sent.count == count, "every recipient")
        #expect(sent.values.allSatisfy { Set($0.map(\.apnsId)).count == 1 }, "one notification each")
        #expect(try job.counts()["sent"] as? Int == count)
    }
}
