import Foundation
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Broadcast campaigns on the built `herald run` against `herald sim --management-port`: channels
/// made with `herald channels create`, an audience naming them (`audience.channel_field`), 429s,
/// 503s and answers lost with their connection on the broadcast path, a SIGKILL mid-send and a
/// rerun; GOAWAYs with channels listed in the job and the in-process simulator. Each channel's update carries one apns-request-id on every request, goes once
/// unless its answer was lost, and the reports say what the simulator's log says.
@Suite(.serialized) struct BroadcastRunTests {
    let dir = TemporaryDirectory("e2e-broadcast")
    let key = TestKey()
    static let bundle = "com.example.scores"

    let herald = Herald()

    /// `herald sim` with a management port, trusting `key`, answering for `bundle`.
    func startSim(_ faults: [String]) throws -> SimulatorProcess {
        try SimulatorProcess(in: dir, trusting: key, bundleId: Self.bundle, management: true, arguments: faults)
    }

    /// A liveactivity job sent to `sim`'s push and management ports with `key`.
    func broadcastJob(_ name: String, sim: SimulatorProcess, connections: Int, _ configure: (inout TestJob) -> Void) throws -> JobFile {
        let keyFile = try key.writeP8(in: dir)
        return try TestJob(name) {
            $0.apns.endpoint = "https://127.0.0.1:\(sim.port)"
            $0.apns.channelsEndpoint = "https://127.0.0.1:\(sim.managementPort ?? 0)"
            $0.apns.caFile = "../sim/ca.pem"
            $0.apns.topic = Self.bundle
            $0.apns.keyFile = keyFile
            $0.apns.connections = connections
            $0.push.type = "liveactivity"
            $0.push.template = "{ aps: { event: update, timestamp: auto, content-state: {} } }"
            configure(&$0)
        }.write(in: dir)
    }

    /// `herald channels …`; the management API meets the simulator's random faults too, so a 429
    /// or 503 (exit 4) is tried again.
    func manage(_ args: [String]) throws -> String {
        for _ in 0..<20 {
            let r = try herald(["channels"] + args)
            if r.status == 0 { return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) }
            #expect(r.status == 4, "only a retryable refusal: \(r.stderr)")
        }
        throw TestSupportError("herald channels \(args.joined(separator: " ")) failed 20 times")
    }

    /// The broadcast requests in the simulator's log, in order.
    static func broadcasts(_ log: String) throws -> [[String: Any]] {
        try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").compactMap { line in
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return (o["path"] as? String)?.hasPrefix("/4/broadcasts/") == true ? o : nil
        }
    }

    @Test func aBroadcastOverManyChannelsWithFaultsIsKilledAndResumedAndEachChannelGetsItsUpdateOnce() throws {
        // Channel ids follow from the seed, and the faults from the ids: with seed 7 the channels'
        // first answers include two 429s and four 503s, every run.
        let sim = try startSim(["--p429", "0.05", "--p503", "0.15", "--seed", "7", "--close-after", "5",
                                "--latency-ms", "25"])
        defer { sim.stop() }
        let admin = try broadcastJob("admin", sim: sim, connections: 1) { $0.push.channels = ["AAAAAAAAAAAAAAAAAAAAAA=="] }.path
        var channels: [String] = []
        for _ in 0..<24 { channels.append(try manage(["create", admin])) }
        let deleted = channels[5]
        #expect(try manage(["delete", admin, deleted]) == "deleted \(deleted)")
        let neverMade = "bmV2ZXItY3JlYXRlZC1jaGFubmVs"
        var rows = ["channel,match"]
        for (i, c) in channels.enumerated() { rows.append("\(c),\(i + 1)") }
        rows.append("\(neverMade),99")
        rows.append("\(channels[0]),1")            // a duplicate row: one request all the same
        rows.append("not a channel!,100")           // line 28: invalid_channel_id
        try dir.write("data/matches.csv", rows.joined(separator: "\n") + "\n")
        let job = try broadcastJob("goal", sim: sim, connections: 2) {
            $0.audience.files = ["../data/matches.csv"]
            $0.audience.channelField = "channel"
            $0.push.priority = "10"
            $0.push.template = #"{ aps: { event: update, timestamp: auto, content-state: { match: "{{match:int}}", home: 1, away: 0 } } }"#
            $0.retry.maxAttempts = 40
            $0.reports.dir = "../reports"
        }
        let before = RequestLog.lineCount(sim.log)
        let p = try herald.start(["run", job.path])
        let seen = RequestLog.wait(for: before + 10, in: sim.log) { p.process.isRunning }
        p.kill9()
        // What the killed run had written reaches the simulator's log a little after the kill:
        // wait until the log stops growing, so every request of the killed run is counted as its.
        var settled = RequestLog.lineCount(sim.log)
        while true {
            Thread.sleep(forTimeInterval: 0.5)
            let now = RequestLog.lineCount(sim.log)
            if now == settled { break }
            settled = now
        }
        let beforeKill = try Self.broadcasts(sim.log)
        let sentBeforeKill = Set(beforeKill.filter { $0["status"] as? Int == 200 }.compactMap { ($0["headers"] as? [String: String])?["apns-channel-id"] })
        #expect(seen >= before + 10 && sentBeforeKill.count < 23, "killed mid-send (\(sentBeforeKill.count) channels answered 200)")

        let r = try herald.run(job)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")

        // The simulator's view: one request id per channel on every request, Apple's headers.
        let sends = try Self.broadcasts(sim.log)
        var ids: [String: Set<String>] = [:]
        var answered200: [String: Int] = [:]
        var last: [String: [String: Any]] = [:]
        for s in sends {
            let headers = try #require(s["headers"] as? [String: String])
            let channel = try #require(headers["apns-channel-id"])
            #expect(s["path"] as? String == "/4/broadcasts/apps/\(Self.bundle)")
            #expect(headers["apns-push-type"] == "liveactivity" && headers["apns-priority"] == "10" && headers["apns-expiration"] == "0")
            #expect(headers["apns-topic"] == nil && headers["apns-id"] == nil, "a broadcast names its app in the path and carries apns-request-id")
            ids[channel, default: []].insert(try #require(headers["apns-request-id"]))
            if s["status"] as? Int == 200 && s["outcome"] as? String == "answered" { answered200[channel, default: 0] += 1 }
            last[channel] = s
        }
        let valid = Set(channels + [neverMade])
        #expect(Set(ids.keys) == valid, "every channel of the audience, nothing else")
        #expect(ids.values.allSatisfy { $0.count == 1 }, "one apns-request-id per channel, on every resend: \(ids.filter { $0.value.count > 1 })")
        let live = Set(channels).subtracting([deleted])
        #expect(live.allSatisfy { (answered200[$0] ?? 0) >= 1 || last[$0]?["outcome"] as? String == "closed_after_processing" })
        // A second answered 200 only for what was in flight or not yet recorded at the kill: a
        // channel the killed run had already asked for.
        let askedByKilledRun = Set(beforeKill.compactMap { ($0["headers"] as? [String: String])?["apns-channel-id"] })
        // Or one whose answer the simulator's close_after fault cut off: processed, never answered,
        // so resent with the same request id (outcome unknown).
        let answerLost = Set(sends.filter { $0["outcome"] as? String == "closed_after_processing" }
            .compactMap { ($0["headers"] as? [String: String])?["apns-channel-id"] })
        let twice = Set(answered200.filter { $0.value > 1 }.keys)
        #expect(twice.isSubset(of: askedByKilledRun.union(answerLost)),
                "answered twice without having been in flight at the kill or cut off: \(twice.subtracting(askedByKilledRun.union(answerLost)).map { c in sends.filter { ($0["headers"] as? [String: String])?["apns-channel-id"] == c }.map { "\($0["connection"] ?? "")/\($0["stream"] ?? "") \($0["status"] ?? "") \($0["outcome"] ?? "") \($0["fault"] ?? "")" } })")
        let faults = sends.compactMap { $0["fault"] as? String }
        #expect(faults.contains("p503") && faults.contains("p429"), "the faults happened on the broadcast path: \(Set(faults))")
        #expect(sends.contains { $0["outcome"] as? String == "closed_after_processing" }, "an answer was lost with its connection")
        #expect(Set(sends.compactMap { $0["connection"] as? Int }).count > 2, "cut connections and 503s made new ones")

        // The reports' view matches it: one row per channel, its id as channel_id, the last answer.
        let reports = dir.file("reports")
        let deliveries = try ReportCheck.csv(reports + "/deliveries.csv")
        #expect(deliveries.count == valid.count)
        #expect(deliveries.allSatisfy { $0["token"] == "" }, "a channel is not a token")
        let byChannel = Dictionary(uniqueKeysWithValues: deliveries.map { ($0["channel_id"]!, $0) })
        #expect(Set(byChannel.keys) == valid)
        for (channel, row) in byChannel {
            let s = try #require(last[channel])
            #expect(row["apns_id"] == ids[channel]?.first, "the request id the simulator saw")
            if live.contains(channel) {
                #expect(row["status"] == "sent" && row["http_status"] == "200", "\(row)")
                if s["outcome"] as? String == "answered" { #expect(row["apns_unique_id"] == s["apns_unique_id"] as? String) }
            } else {
                #expect(row["status"] == "failed" && row["http_status"] == "400" && row["reason"] == "ChannelNotRegistered", "\(row)")
                #expect(s["reason"] as? String == "ChannelNotRegistered")
            }
            #expect(Int(row["attempts"] ?? "") ?? 0 >= 1)
        }
        let invalid = try ReportCheck.csv(reports + "/invalid.csv")
        #expect(invalid.map { [$0["line"]!, $0["reason"]!, $0["token_field"]!] } == [["28", "invalid_channel_id", "channel"]])
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: reports + "/summary.json"))) as? [String: Any])
        let counts = try #require(summary["counts"] as? [String: Int])
        #expect(summary["broadcast_channels"] as? Int == valid.count)
        #expect(counts["sent"] == live.count && counts["failed"] == 2 && counts["duplicates"] == 1 && counts["invalid"] == 1, "\(counts)")
        let ndjson = try String(contentsOfFile: reports + "/deliveries.ndjson", encoding: .utf8).split(separator: "\n")
        let first = try #require(try JSONSerialization.jsonObject(with: Data(ndjson[0].utf8)) as? [String: Any])
        #expect(first["token"] is NSNull && valid.contains(first["channel_id"] as? String ?? ""))
    }

    /// `push.broadcast.channels` in the job, sent to the in-process simulator (`endpoint:
    /// simulator`), which takes the channels as created; then jobs/live-broadcast.yaml as shipped.
    @Test func channelsListedInTheJobAreSentOnceEachAndTheExampleJobRuns() throws {
        let job = try TestJob("listed") {
            $0.apns.topic = Self.bundle
            $0.apns.simulator.goawayAfter = 2
            $0.apns.simulator.p503 = 0.25
            $0.apns.simulator.seed = 3
            $0.push.type = "liveactivity"
            $0.push.expiration = "1h"
            $0.push.channels = ["dHN0LXNyY2gtY2hubA==", "bWF0Y2gtNDItbGlvbnM=", "bWF0Y2gtNDMtbGlvbnM=", "bWF0Y2gtNDQtbGlvbnM=",
                                "bWF0Y2gtNDUtbGlvbnM=", "bWF0Y2gtNDYtbGlvbnM="]
            $0.push.template = "{ aps: { event: end, timestamp: auto, content-state: { final: true }, dismissal-date: 1900000000 } }"
            $0.reports.dir = "../reports-listed"
        }.write(in: dir)
        // The rows of listed channels are the lines of the job file that list them.
        let firstLine = try job.line(of: "- dHN0LXNyY2gtY2hubA==")
        let r = try herald.run(job)
        #expect(r.status == 0 && r.stdout.contains("audience  6 rows: 6 channels,"), "\(r.stdout)\(r.stderr)")
        let sends = try Self.broadcasts(dir.file("out/listed.ndjson"))
        var sent: [String: [String]] = [:]
        for s in sends {
            let headers = try #require(s["headers"] as? [String: String])
            let expiration = try #require(Int(headers["apns-expiration"] ?? ""))
            #expect(abs(expiration - Int(Date().timeIntervalSince1970) - 3600) < 120, "push.expiration: 1h from the send")
            if s["status"] as? Int == 200 { sent[headers["apns-channel-id"]!, default: []].append(headers["apns-request-id"]!) }
        }
        #expect(sent.count == 6 && sent.values.allSatisfy { $0.count == 1 }, "each channel answered 200 once: \(sent)")
        #expect(sends.contains { $0["fault"] as? String == "p503" } && Set(sends.compactMap { $0["connection"] as? Int }).count >= 2,
                "503s retried on a new connection (GOAWAY after two answers)")
        let rows = try ReportCheck.csv(dir.file("reports-listed/deliveries.csv"))
        #expect(rows.map { [$0["file"]!, $0["line"]!, $0["status"]!] } == (firstLine..<firstLine + 6).map { ["listed.yaml", String($0), "sent"] })
        #expect(rows.allSatisfy { sent[$0["channel_id"]!] == [$0["apns_id"]!] }, "the request id of its 200")
        // validate and preview read the listed channels as rows; preview shows the request as sent.
        let validated = try herald(["validate", job.path])
        #expect(validated.status == 0 && validated.stdout.contains("6 rows: 6 valid (6 distinct channels"), "\(validated.stdout)")
        let preview = try herald(["preview", job.path, "--row", String(firstLine + 1)])
        #expect(preview.stdout.contains("listed.yaml line \(firstLine + 1) · channel bWF0Y2gtNDItbGlvbnM=\n:path: /4/broadcasts/apps/\(Self.bundle)\n"
                                        + "apns-channel-id: bWF0Y2gtNDItbGlvbnM=\napns-request-id: \(rows[1]["apns_id"]!)\n"), "\(preview.stdout)")
        #expect(!preview.stdout.contains("apns-topic:"))
        let again = try herald.run(job)
        #expect(again.status == 0 && again.stdout.contains("already finished"))
        #expect(try Self.broadcasts(dir.file("out/listed.ndjson")).count == sends.count, "a finished broadcast sends nothing again")

        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let shipped = try dir.write("example/jobs/live-broadcast.yaml", try String(contentsOf: root.appendingPathComponent("jobs/live-broadcast.yaml"), encoding: .utf8))
        let example = try herald(["run", shipped])
        #expect(example.status == 0 && example.stdout.contains("3 sent"), "\(example.stdout)\(example.stderr)")
    }
    /// Channels that mostly do not exist (of the other environment, or deleted) stop the campaign
    /// (exit 3) with the channels put back to pending, instead of failing them for good.
    @Test func aBroadcastToChannelsThatDoNotExistStopsAndKeepsThemPending() throws {
        let sim = try startSim([])
        defer { sim.stop() }
        let job = try broadcastJob("elsewhere", sim: sim, connections: 1) {
            $0.push.channels = ["bWF0Y2gtNDI=", "bWF0Y2gtNDM=", "bWF0Y2gtNDQ="]
            $0.reports.dir = "../reports-elsewhere"
        }
        let r = try herald.run(job)
        #expect(r.status == 3, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("3 of the first 3 channels answered ChannelNotRegistered"), "\(r.stderr)")
        let rows = try ReportCheck.csv(dir.file("reports-elsewhere/deliveries.csv"))
        #expect(rows.count == 3 && rows.allSatisfy { $0["status"] == "pending" }, "\(rows)")
        #expect(try Self.broadcasts(sim.log).count == 3)
    }

    /// A resumed run keeps what it was: a job edited between device pushes and a broadcast is
    /// refused (exit 2) before anything is sent; and a listed channel added to or removed from an
    /// unfinished broadcast is read again like a changed audience file.
    @Test func aResumedRunKeepsItsShapeAndReadsAnEditedChannelListAgain() throws {
        func write(_ channels: [String], p503: Double, type: String = "broadcast") throws -> JobFile {
            try TestJob("edited") {
                $0.apns.topic = Self.bundle
                $0.apns.simulator.p503 = p503
                $0.retry.maxAttempts = 1
                $0.reports.dir = "../reports-edited"
                if type == "broadcast" {
                    $0.push.type = "liveactivity"
                    $0.push.channels = channels
                    $0.push.template = "{ aps: { event: update, timestamp: auto, content-state: {} } }"
                } else {
                    $0.audience.files = ["../data/tokens.csv"]
                    $0.push.template = "{ aps: { alert: hi } }"
                }
            }.write(in: dir)
        }
        var r = try herald.run(try write(["bWF0Y2gtNDI=", "bWF0Y2gtNDM="], p503: 1.0))
        #expect(r.status == 4, "every channel answered 503 once: rerun to resume. \(r.stdout)\(r.stderr)")

        try dir.write("data/tokens.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        r = try herald.run(try write([], p503: 0, type: "device"))
        #expect(r.status == 2 && r.stderr.contains("sends a broadcast to channels, and this job now sends device pushes"), "\(r.stderr)")

        r = try herald.run(try write(["bWF0Y2gtNDM=", "bWF0Y2gtNDQ="], p503: 0))
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("push.broadcast.channels: content changed"), "\(r.stderr)")
        var sent: [String: Int] = [:]
        for s in try Self.broadcasts(dir.file("out/edited.ndjson")) where s["status"] as? Int == 200 {
            sent[(s["headers"] as? [String: String])?["apns-channel-id"] ?? "", default: 0] += 1
        }
        #expect(sent == ["bWF0Y2gtNDM=": 1, "bWF0Y2gtNDQ=": 1], "the channel taken off the list is not sent: \(sent)")
        let rows = try ReportCheck.csv(dir.file("reports-edited/deliveries.csv"))
        #expect(Dictionary(uniqueKeysWithValues: rows.map { ($0["channel_id"]!, $0["status"]! + "/" + $0["reason"]!) })
                == ["bWF0Y2gtNDI=": "suppressed/vanished_from_audience", "bWF0Y2gtNDM=": "sent/", "bWF0Y2gtNDQ=": "sent/"], "\(rows)")
    }
}
