import Foundation
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Delivery events (`events` in the job) on the built `herald run`: every recorded outcome reaches
/// an HTTP receiver in the test at least once, through a SIGKILL and a receiver that refuses a
/// batch in five; a receiver that refuses or hangs changes nothing about the campaign; the header
/// secret stays out of every log line. The reports and the simulator's log are the truth.
@Suite(.serialized) struct DeliveryEventsTests {
    let dir = TemporaryDirectory("e2e-events")
    static let secret = "Bearer s3cret-events-token"

    /// The runs see the events header's secret in EVENTS_TOKEN.
    let herald = Herald(environment: ["EVENTS_TOKEN": DeliveryEventsTests.secret])
    /// Without it.
    let heraldWithoutSecret = Herald()

    /// Tokens from 0x1000 to 0x1fff are answered 410 Unregistered.
    func job(_ name: String, count: Int, events: String, latencyMs: Int = 0) throws -> JobFile {
        try TestJob(name, rows: ["token,user"] + tokens(1...count).enumerated().map { "\($1),user-\($0 + 1)" }) {
            $0.audience.idField = "user"
            $0.apns.connections = 2
            $0.apns.streamsPerConnection = 50
            $0.apns.simulator.unregisteredPrefixes = [String(repeating: "0", count: 60) + "1"]
            $0.apns.simulator.latencyMs = latencyMs
            $0.events = events
        }.write(in: dir)
    }

    /// Each token's final status and HTTP status, from deliveries.ndjson.
    func outcomes(_ name: String) throws -> [String: (status: String, http: Int?)] {
        var out: [String: (String, Int?)] = [:]
        for line in try String(contentsOfFile: dir.file("reports/\(name)/deliveries.ndjson"), encoding: .utf8).split(separator: "\n") {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            out[o["token"] as! String] = (o["status"] as! String, o["http_status"] as? Int)
        }
        return out
    }

    /// The events in the bodies of the requests `accepted` says were answered 2xx.
    static func events(in requests: [HTTPReceiver.Request], accepted: (Int) -> Bool = { _ in true }) throws -> [[String: Any]] {
        var out: [[String: Any]] = []
        for (i, r) in requests.enumerated() where accepted(i) {
            for line in r.body.split(separator: "\n") {
                out.append(try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]))
            }
        }
        return out
    }

    /// Every token's outcome arrived at least once, under one event id, with the type the reports say.
    func expectEveryOutcome(_ events: [[String: Any]], match truth: [String: (status: String, http: Int?)], campaign: String) {
        var ids: [String: Set<String>] = [:]
        var types: [String: Set<String>] = [:]
        for e in events {
            let token = e["token"] as? String ?? ""
            ids[token, default: []].insert(e["event_id"] as? String ?? "")
            types[token, default: []].insert(e["type"] as? String ?? "")
            #expect(e["campaign"] as? String == campaign)
        }
        #expect(Set(ids.keys) == Set(truth.keys), "every recorded outcome arrived: \(truth.count - Set(ids.keys).intersection(truth.keys).count) missing")
        #expect(ids.values.allSatisfy { $0.count == 1 }, "a redelivered event keeps its id")
        #expect(Set(ids.values.flatMap { $0 }).count == truth.count, "one event id per outcome")
        let wrong = truth.filter { token, t in
            let expected = t.http == 410 ? "unregistered" : t.status
            return types[token] != [expected]
        }
        #expect(wrong.isEmpty, "event types match the reports: \(wrong.prefix(3))")
    }

    @Test func everyOutcomeArrivesThroughASigkillAndAReceiverThatFailsOneBatchInFive() throws {
        let receiver = try HTTPReceiver()
        defer { receiver.stop() }
        let fails: @Sendable (Int) -> Bool = { $0 % 5 == 2 }
        receiver.answering = { fails($0) ? .status(500) : .status(200) }
        let name = "events-kill"
        let path = try job(name, count: 12_000, events: """
            { url: "\(receiver.url)/herald/events", batch: 300, flush: 1s, headers_env: { Authorization: EVENTS_TOKEN } }
            """, latencyMs: 5)
        let log = dir.file("out/\(name).ndjson")

        let p = try herald.start(["run", path.path])
        let seen = RequestLog.wait(for: 5_000, in: log) { p.process.isRunning }
        waitUntil(timeout: 30) { receiver.requests.count >= 6 || !p.process.isRunning }
        p.kill9()
        #expect(seen >= 5_000 && seen < 12_000, "killed mid-send (\(seen) answered)")
        let beforeRerun = receiver.requests.count
        #expect(beforeRerun >= 6, "events flowed while sending: \(beforeRerun) batches")

        var r = try herald.run(path)
        if r.status == 4 { r = try herald.run(path) }
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let truth = try outcomes(name)
        #expect(truth.count == 12_000)
        #expect(truth.values.filter { $0.http == 410 }.count == 4_096)

        let requests = receiver.requests
        #expect(requests.allSatisfy { $0.method == "POST" && $0.path == "/herald/events" })
        #expect(requests.allSatisfy { $0.headers["authorization"] == Self.secret && $0.headers["content-type"] == "application/x-ndjson" })
        #expect(requests.filter { $0.body.isEmpty }.isEmpty, "no empty batch")
        #expect(requests.allSatisfy { $0.body.split(separator: "\n").count <= 300 }, "batch: 300 at most")
        expectEveryOutcome(try Self.events(in: requests, accepted: { !fails($0) }), match: truth, campaign: name)
        #expect(requests.indices.contains { fails($0) }, "some batches were refused")

        // The rerun's summary and status: nothing waits, and the refusals were counted.
        let summary = try JSON.object(dir.file("reports/\(name)/summary.json"))
        let url = try #require((summary["events"] as? [String: Any])?["url"] as? [String: Any], "\(summary)")
        #expect(url["waiting"] as? Int == 0 && (url["failed_attempts"] as? Int ?? 0) > 0 && url["error"] is NSNull, "\(url)")
        #expect(r.stdout.contains("events    url "), "\(r.stdout)")
        let status = try herald(["status", path.path])
        #expect(status.stdout.contains("events    url ") && status.stdout.contains(" 0 waiting in the outbox"), "\(status.stdout)")
        #expect(!(r.stdout + r.stderr + status.stdout).contains("s3cret"), "the header's value is never shown")
    }

    /// A 4xx stops the events, not the campaign: the run finishes (exit 0), the summary and the
    /// result line say why, the events wait in the outbox, and the next run of the finished
    /// campaign delivers them. What the receiver said is logged with the secret cut out.
    @Test func aRefusingReceiverStopsTheEventsAndTheNextRunDeliversThem() throws {
        let receiver = try HTTPReceiver(answer: .status(401))
        defer { receiver.stop() }
        let name = "events-401"
        let path = try job(name, count: 400, events: "{ url: \"\(receiver.url)/e\", batch: 100, flush: 1s, headers_env: { Authorization: EVENTS_TOKEN } }")
        let r = try herald.run(path)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(RequestLog.lineCount(dir.file("out/\(name).ndjson")) == 400, "every recipient sent")
        #expect(receiver.requests.count == 1, "a 4xx is not tried again in the run: \(receiver.requests.count)")
        #expect(r.stderr.contains("events.url (127.0.0.1): the receiver answered HTTP 401"), "\(r.stderr)")
        #expect(r.stdout.contains("url 0 delivered, 400 waiting (stopped: the receiver answered HTTP 401"), "\(r.stdout)")
        #expect(r.stdout.contains("result    finished: every recipient reached a final state; delivery events still waiting in the outbox: 400 for url"),
                "the result line says what still waits: \(r.stdout)")
        let url = try #require((try JSON.object(dir.file("reports/\(name)/summary.json"))["events"] as? [String: Any])?["url"] as? [String: Any])
        #expect(url["delivered"] as? Int == 0 && url["waiting"] as? Int == 400 && (url["error"] as? String)?.contains("401") == true, "\(url)")
        var status = try herald(["status", path.path])
        #expect(status.stdout.contains("events    url 0 delivered, 400 waiting in the outbox"), "\(status.stdout)")

        receiver.answer = .status(204)
        let again = try herald.run(path)
        #expect(again.status == 0 && again.stdout.contains("already finished"), "\(again.stdout)\(again.stderr)")
        #expect(again.stdout.contains("url 400 delivered, 0 waiting"), "\(again.stdout)")
        #expect(!again.stdout.contains("still waiting in the outbox"), "\(again.stdout)")
        expectEveryOutcome(try Self.events(in: Array(receiver.requests.dropFirst())), match: try outcomes(name), campaign: name)
        status = try herald(["status", path.path])
        #expect(status.stdout.contains("events    url 400 delivered, 0 waiting in the outbox"), "\(status.stdout)")
        #expect(!(r.stdout + r.stderr + again.stdout + again.stderr).contains("s3cret"))
    }

    /// The receiver's answer is logged with the header's value cut out, should it echo it.
    @Test func whatTheReceiverSaysIsLoggedWithoutTheSecret() throws {
        let receiver = try HTTPReceiver(answer: .status(403))
        defer { receiver.stop() }
        receiver.body = "token \(Self.secret) is not allowed"
        let path = try job("events-403", count: 10, events: "{ url: \"\(receiver.url)/e\", flush: 1s, headers_env: { Authorization: EVENTS_TOKEN } }")
        let r = try herald.run(path)
        #expect(r.status == 0)
        #expect(r.stderr.contains("answered HTTP 403: token [redacted] is not allowed"), "\(r.stderr)")
        #expect(!(r.stdout + r.stderr).contains("s3cret"))
        let summary = try String(contentsOfFile: dir.file("reports/events-403/summary.json"), encoding: .utf8)
        #expect(summary.contains("[redacted]") && !summary.contains("s3cret"))
    }

    /// A receiver that never answers costs the campaign nothing: every push is sent, the file
    /// sink beside it gets every event, and the webhook's wait in the outbox until a later run.
    @Test func aHangingReceiverLeavesEventsInTheOutboxAndTheFileGetsThemAll() throws {
        let receiver = try HTTPReceiver(answer: .hang)
        defer { receiver.stop() }
        let name = "events-hang"
        let path = try job(name, count: 2_000, events: """
            { url: "\(receiver.url)/e", file: ../out/\(name)-events.ndjson, batch: 500, flush: 1s, timeout: 1s }
            """)
        let r = try heraldWithoutSecret.run(path)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(RequestLog.lineCount(dir.file("out/\(name).ndjson")) == 2_000, "every recipient sent")
        #expect(r.stdout.contains("url 0 delivered, 2,000 waiting") && r.stdout.contains("file 2,000 delivered, 0 waiting"), "\(r.stdout)")
        let file = dir.file("out/\(name)-events.ndjson")
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        expectEveryOutcome(try lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) },
                           match: try outcomes(name), campaign: name)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
        #expect(mode == 0o600, "events carry tokens: owner only")

        receiver.answer = .status(200)
        let again = try heraldWithoutSecret.run(path)
        #expect(again.stdout.contains("url 2,000 delivered, 0 waiting") && again.stdout.contains("file 0 delivered, 0 waiting"), "\(again.stdout)")
        #expect(try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").count == 2_000, "the file is not written twice")
    }

    /// The header's variable must be set: exit 2 before anything is sent, naming header and variable.
    @Test func aMissingHeaderVariableIsAConfigurationError() throws {
        let path = try job("events-env", count: 5, events: "{ url: \"http://127.0.0.1:9/e\", headers_env: { Authorization: EVENTS_TOKEN } }")
        let r = try heraldWithoutSecret.run(path)
        #expect(r.status == 2)
        #expect(r.stderr.contains("events.headers_env.Authorization: the environment variable EVENTS_TOKEN is not set"), "\(r.stderr)")
        #expect(RequestLog.lineCount(dir.file("out/events-env.ndjson")) == 0)
    }
}
