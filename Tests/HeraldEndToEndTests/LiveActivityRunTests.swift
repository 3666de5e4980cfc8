import Foundation
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Per-device Live Activities on the built `herald run`: the headers Apple requires, and
/// `timestamp: auto` set when each recipient's push is first rendered and carried unchanged by
/// every resend of that notification: after a SIGKILL mid-send and after 503s.
@Suite(.serialized) struct LiveActivityRunTests {
    let dir = TemporaryDirectory("e2e-live")
    static let count = 3_000
    let herald = Herald()

    @Test func anAutoTimestampIsTheSameOnEveryResendAfterASigkill() throws {
        var rows = ["token,home,away"]
        for i in 1...Self.count { rows.append(String(format: "%064x,%d,%d", i, i % 5, i % 3)) }
        try dir.write("data/score.csv", rows.joined(separator: "\n") + "\n")
        let job = try TestJob("score") {
            $0.audience.files = ["../data/score.csv"]
            $0.apns.connections = 1
            $0.apns.streamsPerConnection = 50
            $0.apns.simulator.latencyMs = 2
            $0.apns.simulator.flaky = [.init(prefix: "00000000000000000000000000000000000000000000000000000000000000a", count: 2, status: 503)]
            $0.push.type = "liveactivity"
            $0.push.priority = "10"
            $0.push.template = """
                aps:
                  event: update
                  timestamp: auto
                  content-state: { home: "{{home:int}}", away: "{{away:int}}" }
                  stale-date: 1900000000
                """
        }.write(in: dir)
        let log = dir.file("out/score.ndjson")
        let p = try herald.start(["run", job.path])
        let seen = RequestLog.wait(for: 1_000, in: log) { p.process.isRunning }
        p.kill9()
        #expect(seen >= 1_000 && seen < Self.count, "killed mid-send (\(seen) answered)")
        // A rerun a second or more later would render a later second: the kept payload must not.
        Thread.sleep(forTimeInterval: 1.2)
        let r = try herald.run(job)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")

        var stamps: [String: Set<Int>] = [:]
        var ids: [String: Set<String>] = [:]
        var firstSeen: [String: Double] = [:]
        for line in try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n") {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let token = try #require(o["token"] as? String)
            let headers = try #require(o["headers"] as? [String: String])
            #expect(headers["apns-push-type"] == "liveactivity" && headers["apns-topic"] == "com.example.app.push-type.liveactivity")
            let body = try #require(o["body"] as? String)
            let aps = try #require((try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["aps"] as? [String: Any])
            stamps[token, default: []].insert(try #require(aps["timestamp"] as? Int))
            ids[token, default: []].insert(try #require(headers["apns-id"]))
            let ms = try #require((o["time_ms"] as? NSNumber)?.doubleValue)
            firstSeen[token] = min(firstSeen[token] ?? ms, ms)
        }
        #expect(stamps.count == Self.count, "every recipient")
        let resent = try RequestLog.read(log).values.filter { $0.count > 1 }.count
        let moved = stamps.filter { $0.value.count != 1 }
        #expect(moved.isEmpty, "each notification keeps its timestamp on every resend: \(moved.prefix(3))")
        #expect(ids.allSatisfy { $0.value.count == 1 }, "and its apns-id")
        #expect(stamps.allSatisfy { token, s in Double(s.first!) * 1000 <= firstSeen[token]! }, "rendered before it first left")
        let flaky = stamps.keys.filter { $0.hasPrefix("00000000000000000000000000000000000000000000000000000000000000a") }
        #expect(!flaky.isEmpty && resent > 0)
    }

    /// The worked example's three jobs (docs/live-activities.md) load and their audiences are valid.
    @Test func theExampleJobsAreValid() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        for name in ["live-start", "live-update", "live-end"] {
            let r = try herald(["validate", root.appendingPathComponent("jobs/\(name).yaml").path])
            #expect(r.status == 0 && r.stdout.contains("0 of 12 rows"), "\(name): \(r.stdout)\(r.stderr)")
        }
    }
}
