import CHTTP2Client
import Foundation
import HeraldSimulator
import HeraldTestSupport
import Testing

/// CHTTP2Client's connection on its own, against the in-process simulator: what nghttp2 does with
/// requests it holds in its queue, which the worker above never sees.
@Suite(.serialized, .enabled(if: EnginesUnderTest.includesNghttp2)) struct HTTP2ClientTests {
    static func fields(path: String) -> [UInt8] {
        var out: [UInt8] = []
        func add(_ name: String, _ value: String) {
            for part in [name, value] {
                out.append(UInt8(part.utf8.count >> 8)); out.append(UInt8(part.utf8.count & 0xFF)); out += Array(part.utf8)
            }
        }
        add(":path", path)
        add("apns-topic", StreamingSenderTests.bundle)
        add("apns-push-type", "alert")
        return out
    }

    /// APNs "allows only one stream until you post a request with a valid authentication token"
    /// (https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns),
    /// then raises the limit. Requests nghttp2 holds above the first limit must leave once it is raised.
    @Test func requestsHeldAboveTheFirstLimitLeaveWhenTheServerRaisesIt() throws {
        let f = try StreamingSenderTests.Fixture()
        defer { try? f.sim.shutdown() }
        let c = try Self.connect(f)
        defer { h2_close(c.connection); h2_tls_free(c.tls) }
        // Read before h2_connect returns (until then nghttp2 assumes 100, and APNs would refuse 39 of these).
        #expect(h2_remote_max_streams(c.connection) == 1)
        let jwt = try f.token().current()
        for i in 1...40 { #expect(Self.submit(c.connection, i, jwt: jwt) > 0) }
        let answers = Self.collect(c.connection, count: 40)
        #expect(answers.count == 40 && answers.values.allSatisfy { $0.status == 200 && $0.complete == 1 }, "\(answers)")
        #expect(f.sim.requestLog.entries().count == 40)
    }

    struct Connected { let tls: OpaquePointer; let connection: OpaquePointer }

    static func connect(_ f: StreamingSenderTests.Fixture) throws -> Connected {
        var err = [CChar](repeating: 0, count: 512)
        let ca = Array(f.sim.caCertificatePEM.utf8)
        let tls = try #require(ca.withUnsafeBufferPointer { p -> OpaquePointer? in
            var o = h2_tls_options()
            o.ca_pem = p.baseAddress
            o.ca_pem_len = p.count
            return h2_tls_new(&o, &err, err.count)
        })
        var kind = H2_OK
        let c = try #require(h2_connect(tls, "127.0.0.1", String(f.sim.port), "127.0.0.1:\(f.sim.port)", nil, 5_000, 60, &kind, &err, err.count))
        return Connected(tls: tls, connection: c)
    }

    static func submit(_ c: OpaquePointer, _ i: Int, jwt: String) -> Int32 {
        var block = fields(path: "/3/device/" + String(format: "%064x", i))
        for part in ["authorization", "bearer \(jwt)", "apns-id", String(format: "00000000-0000-5000-8000-%012x", i)] {
            block.append(UInt8(part.utf8.count >> 8)); block.append(UInt8(part.utf8.count & 0xFF)); block += Array(part.utf8)
        }
        let body = Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        return block.withUnsafeBufferPointer { b in body.withUnsafeBufferPointer { h2_submit(c, b.baseAddress, b.count, $0.baseAddress, $0.count, UInt64(i)) } }
    }

    static func collect(_ c: OpaquePointer, count: Int) -> [UInt64: (status: Int32, complete: Int32, notSent: Int32)] {
        var err = [CChar](repeating: 0, count: 512)
        var answers: [UInt64: (status: Int32, complete: Int32, notSent: Int32)] = [:]
        _ = waitUntil(timeout: 10) {
            var p = pollfd(fd: h2_fd(c), events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, 20)
            _ = h2_turn(c, &err, err.count)
            var n = 0
            if let a = h2_answers(c, &n) {
                for i in 0..<n { answers[a[i].cookie] = (a[i].status, a[i].complete, a[i].not_sent) }
            }
            h2_clear_answers(c)
            return answers.count >= count
        }
        return answers
    }

    /// The server allows one stream and goes away after its first request. Three requests are
    /// submitted: nghttp2 sends the first and holds the others, whose streams it opens only when
    /// their HEADERS leave; the GOAWAY then strands them. Each is still answered, as never sent.
    @Test func requestsQueuedWhenAGoawayArrivesAreAnsweredAsNeverSent() throws {
        let f = try StreamingSenderTests.Fixture {
            $0.maxConcurrentStreams = 1
            $0.faults.goawayAfter = 1
        }
        defer { try? f.sim.shutdown() }
        let c = try Self.connect(f)
        defer { h2_close(c.connection); h2_tls_free(c.tls) }
        #expect(h2_remote_max_streams(c.connection) == 1, "the server's SETTINGS are read before h2_connect returns")
        let jwt = try f.token().current()
        for i in 1...3 { #expect(Self.submit(c.connection, i, jwt: jwt) > 0) }
        let answers = Self.collect(c.connection, count: 3)
        #expect(answers.count == 3, "every request is answered, none left hanging: \(answers)")
        #expect(answers[1]?.status == 200 && answers[1]?.complete == 1)
        #expect(answers[2]?.notSent == 1 && answers[3]?.notSent == 1, "\(answers)")
        #expect(f.sim.requestLog.entries().count == 1, "the two held back never reached the server")
        #expect(h2_open_streams(c.connection) == 0)
    }
}
