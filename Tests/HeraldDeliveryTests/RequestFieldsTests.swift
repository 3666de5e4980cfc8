import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// The shims this test process runs with (`make test` runs these suites again with
/// HERALD_LIBCURL_SHIMS=off): each test asserts the path it takes, shim or plain libcurl.
func shimEngaged(_ shim: LibcurlShims.Shim) -> Bool {
    LibcurlShims.engage(environment: ProcessInfo.processInfo.environment).engaged.contains(shim)
}

/// The APNs header fields of streamed requests, handed to nghttp2 directly by
/// Sources/CCurlNghttp2/request_headers.c, against the simulator's request log: every request carries
/// exactly its own fields, on that path and on the fallback through libcurl's header list.
@Suite(.serialized) struct RequestFieldsTests {
    typealias Fixture = StreamingSenderTests.Fixture

    /// Requests whose other headers change from one to the next, so the fields are laid out
    /// again between requests of one slot as well as patched (apns-id only).
    static func mixedJobs(_ range: ClosedRange<Int>) -> [PushJob] {
        range.map { i in
            let background = i % 7 == 0
            return PushJob(index: i, request: PushRequest(
                token: try! DeviceToken.normalize(String(format: "%064x", i)).get(),
                payload: Array((background ? #"{"aps":{"content-available":1}}"# : #"{"aps":{"alert":"hi \#(i)"}}"#).utf8),
                apnsId: String(format: "00000000-0000-5000-8000-%012x", i), topic: StreamingSenderTests.bundle,
                pushType: background ? .background : .alert, priority: background ? 5 : 10,
                collapseId: i % 3 == 0 ? "herald:\(i % 5)" : nil, expiration: i % 4 == 0 ? 1_900_000_000 + i : nil))
        }
    }

    /// What the log must show for job `i`'s request.
    static func expectedHeaders(_ job: PushJob) -> [String: String] {
        let r = job.request
        var h = ["apns-id": r.apnsId, "apns-topic": r.topic, "apns-push-type": r.pushType.rawValue, "apns-priority": String(r.priority)]
        if let c = r.collapseId { h["apns-collapse-id"] = c }
        if let x = r.expiration { h["apns-expiration"] = String(x) }
        return h
    }

    /// Streams `mixedJobs(range)` through a sender made with `settings`, shuts it down, and checks
    /// every request was answered 200 and logged by the simulator with exactly its own fields.
    static func sendMixed(_ f: Fixture, _ settings: ConnectionSettings, connections: Int = 1, _ range: ClosedRange<Int>,
                          ahead: Int) throws -> (sender: APNsSender, jobs: [PushJob], results: [PushResult], log: [SimulatorRequestLog.Entry]) {
        let sender = try APNsSender(settings: settings, connections: connections, token: try f.token())
        let jobs = mixedJobs(range)
        let results = StreamingSenderTests.stream(sender, jobs, ahead: ahead)
        sender.shutdown()
        #expect(results.count == jobs.count && results.allSatisfy { $0.outcome.status == 200 })
        let log = f.sim.requestLog.entries()
        #expect(log.count == jobs.count)
        checkLog(log, against: jobs, authority: "127.0.0.1:\(f.sim.port)")
        return (sender, jobs, results, log)
    }

    static func checkLog(_ log: [SimulatorRequestLog.Entry], against jobs: [PushJob], authority: String) {
        let byId = Dictionary(uniqueKeysWithValues: jobs.map { ($0.request.apnsId, $0) })
        let apnsNames: Set<String> = ["apns-id", "apns-topic", "apns-push-type", "apns-priority", "apns-collapse-id", "apns-expiration"]
        var seen: Set<String> = []
        for entry in log {
            guard let id = entry.headers["apns-id"], let job = byId[id] else {
                Issue.record("a request without a known apns-id: \(entry.headers)")
                continue
            }
            seen.insert(id)
            #expect(entry.headers.filter { apnsNames.contains($0.key) } == Self.expectedHeaders(job), "request \(job.index)")
            #expect(entry.path == "/3/device/" + job.request.token.hex)
            #expect(entry.body == job.request.payload, "request \(job.index)'s body")
            #expect(entry.otherHeaderNames == ["content-length"], "\(entry.otherHeaderNames)")
            #expect(entry.authority == authority)
            #expect(entry.jwtIat != nil, "authorization carried")
            #expect(entry.status == 200, "\(entry.status ?? 0) \(entry.reason ?? "")")
        }
        #expect(seen.count == jobs.count)
    }

    /// Each result carries its answer's apns-id and apns-unique-id, as the simulator logged them.
    static func checkAnswerIds(_ results: [PushResult], _ log: [SimulatorRequestLog.Entry], jobs: [PushJob]) {
        let logged = Dictionary(log.compactMap { e in e.headers["apns-id"].map { ($0, e) } }, uniquingKeysWith: { a, _ in a })
        for r in results {
            let sent = jobs.first { $0.index == r.index }!.request.apnsId
            guard case .answered(_, let apnsId, _, _) = r.outcome else { continue }
            #expect(apnsId == sent, "request \(r.index)")
            #expect(r.apnsUniqueId != nil && r.apnsUniqueId == logged[sent]?.uniqueId, "request \(r.index)")
        }
    }

    /// Each request's apns-id goes to nghttp2 flagged never indexed (HPACK, RFC 7541 §6.2.3), so
    /// it does not push the shared fields out of the dynamic table; no other field is flagged.
    @Test func theApnsIdGoesOutNeverIndexedAndNothingElseDoes() {
        let easy = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)   // never dereferenced: a key only
        defer { easy.deallocate() }
        let fields = RequestFields(easy: easy, authority: "api.push.apple.com")
        let r = Self.mixedJobs(3...3)[0].request
        let key = StreamSlot.HeaderKey(generation: 1, topic: r.topic, pushType: r.pushType, priority: r.priority,
                                       collapseId: r.collapseId, expiration: r.expiration)
        r.payload.withUnsafeBufferPointer { fields.prepare(r, key: key, jwt: "header.claims.signature", body: $0.baseAddress!) }
        #expect(fields.fieldNames.filter(\.neverIndexed).map(\.name) == ["apns-id"], "\(fields.fieldNames)")
        #expect(fields.fieldNames.map(\.name).contains("authorization"))
    }

    @Test func apnsHeadersGoStraightToNghttp2WithEachRequestsOwnValues() throws {
        let on = shimEngaged(.requestHeaders)
        #expect(RequestFields.inEffect == on, "libcurl's nghttp2_submit_request calls reach CCurlNghttp2 exactly when its shim is engaged")
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let (sender, jobs, results, log) = try Self.sendMixed(f, f.settings(streams: 30), connections: 2, 1...400, ahead: 80)
        // Every request carried its own fields (sendMixed checked the log), and every answer's
        // ids reached its result: taken from nghttp2 with the shims, by libcurl without them.
        Self.checkAnswerIds(results, log, jobs: jobs)
        let probe = sender.probe
        if on {
            #expect((probe.shim.answerFieldsTaken, probe.shim.answerFieldsDropped) == (800, 0))
            #expect((probe.requestFieldsAttached, probe.requestFieldsMissed) == (400, 0))
        } else {
            #expect((probe.shim.answerFieldsTaken, probe.requestFieldsAttached, probe.requestFieldsMissed) == (0, 0, 0), "off is off")
        }
        // With coalesced_writes.c each request's HEADERS and DATA frames leave in one TLS write
        // (frame by frame there would be at least as many writes as frames); off, none is collected.
        if shimEngaged(.coalescedWrites) {
            #expect(probe.shim.framesCollected >= 800 && probe.shim.writesMade <= 400 + 20, "\(probe.shim)")
        } else {
            #expect(probe.shim.framesCollected == 0 && probe.shim.writesMade == 0, "\(probe.shim)")
        }
    }

    /// Bodies of about 4,000 bytes on 300 streams of one connection, all started in one turn:
    /// 1.2 MB against the simulator's 1 MiB connection window, so some DATA frames wait for a
    /// WINDOW_UPDATE and take the rest of their body from the slot later, in another call than
    /// their HEADERS. Each body still arrives whole, and each only once.
    @Test func largeBodiesHeldBackByFlowControlArriveWhole() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let sender = try APNsSender(settings: f.settings(streams: 300), connections: 1, token: try f.token())
        let jobs = StreamingSenderTests.jobs(1...400).map { job in
            var j = job
            let filler = String(repeating: String(format: "%04d", job.index), count: 990)
            j.request.payload = Array(#"{"aps":{"alert":"\#(filler)"}}"#.utf8)
            return j
        }
        #expect(jobs.allSatisfy { $0.request.payload.count > 3_900 && $0.request.payload.count <= 4_096 })
        let results = StreamingSenderTests.stream(sender, jobs, ahead: 400)
        sender.shutdown()
        if shimEngaged(.requestHeaders) {
            #expect(sender.probe.shim.bodiesSplit > 0, "no body waited for the window: the test missed its path")
            #expect((sender.probe.requestFieldsAttached, sender.probe.requestFieldsMissed) == (400, 0))
        } else {
            // libcurl sends the bodies itself.
            #expect((sender.probe.shim.bodiesSplit, sender.probe.requestFieldsAttached) == (0, 0))
        }
        #expect(results.count == 400 && results.allSatisfy { $0.outcome.status == 200 })
        let log = f.sim.requestLog.entries()
        #expect(log.count == 400)
        Self.checkLog(log, against: jobs, authority: "127.0.0.1:\(f.sim.port)")
    }

    /// Where libcurl makes its own :authority and content-length (another libcurl may; here its
    /// Host and Content-Length are simply not cleared), the fields replace their values: to that
    /// libcurl the request has no body, so its content-length says 0, and a body after it would
    /// be a malformed request.
    @Test(.enabled(if: shimEngaged(.requestHeaders), "the fields reach nghttp2 only through the shim"))
    func libcurlsOwnAuthorityAndLengthTakeTheFieldsValues() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        var settings = f.settings(streams: 20)
        settings.keepLibcurlsHostAndLength = true
        let sender = try Self.sendMixed(f, settings, 1...100, ahead: 40).sender
        #expect((sender.probe.requestFieldsAttached, sender.probe.requestFieldsMissed) == (100, 0))
    }

    /// :authority as libcurl's Host header gives it: the port left out when it is https' own.
    @Test func authorityIsTheEndpointsHostAndPort() {
        #expect(StreamSlot.authority(of: "https://api.push.apple.com") == "api.push.apple.com")
        #expect(StreamSlot.authority(of: "https://api.push.apple.com:443") == "api.push.apple.com")
        #expect(StreamSlot.authority(of: "https://api.sandbox.push.apple.com:2197") == "api.sandbox.push.apple.com:2197")
        #expect(StreamSlot.authority(of: "https://[::1]:8443") == "[::1]:8443")
        #expect(StreamSlot.authority(of: "https://127.0.0.1:4433/") == "127.0.0.1:4433")
    }

    @Test func libcurlsHeaderListCarriesTheSameFieldsWhenTheShimIsOff() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        var settings = f.settings(streams: 30)
        settings.requestFieldsToNghttp2 = false
        let (sender, jobs, results, log) = try Self.sendMixed(f, settings, 1...200, ahead: 60)
        // Here libcurl's header callback reads the answers' ids.
        Self.checkAnswerIds(results, log, jobs: jobs)
        #expect((sender.probe.shim.answerFieldsTaken, sender.probe.shim.answerFieldsDropped) == (0, 0))
        #expect((sender.probe.requestFieldsAttached, sender.probe.requestFieldsMissed) == (0, 0))
    }

    /// If libcurl's call did not reach the shim, requests would leave without topic, apns-id and
    /// authorization. Their answers say nothing about the notification: each is a transport
    /// failure (resent with the same apns-id), never a verdict, and the worker falls back to
    /// libcurl's header list for everything after.
    @Test(.enabled(if: shimEngaged(.requestHeaders), "fields are withheld only on the shim's path"))
    func requestsThatLeftWithoutTheirFieldsAreResentThroughTheHeaderList() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        var settings = f.settings(streams: 10)
        settings.withholdRequestFields = true
        let sender = try APNsSender(settings: settings, connections: 1, token: try f.token())
        let jobs = Self.mixedJobs(1...100)
        var results = StreamingSenderTests.stream(sender, jobs, ahead: 10)
        #expect(!sender.halted, "a 403 MissingProviderToken to a bare request must not abort the campaign")
        let lost = Set(results.filter { $0.outcome.isTransportFailure }.map(\.index))
        #expect(!lost.isEmpty && lost.count <= 10, "only the requests in flight when the worker noticed: \(lost.count)")
        results = results.filter { !lost.contains($0.index) } + StreamingSenderTests.stream(sender, jobs.filter { lost.contains($0.index) }, ahead: 10)
        sender.shutdown()
        #expect(results.count == 100 && results.allSatisfy { $0.outcome.status == 200 })
        let log = f.sim.requestLog.entries()
        let bare = log.filter { $0.headers["apns-id"] == nil }
        #expect(bare.count == lost.count && bare.allSatisfy { $0.status != 200 && $0.jwtIat == nil })
        Self.checkLog(log.filter { $0.headers["apns-id"] != nil }, against: jobs, authority: "127.0.0.1:\(f.sim.port)")
        #expect((sender.probe.requestFieldsAttached, sender.probe.requestFieldsMissed) == (0, lost.count))
    }
}
