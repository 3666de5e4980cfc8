import CHTTP2Client
import Foundation
import HeraldSimulator
import HeraldTestSupport
import Testing

/// CHTTP2Client's connection on its own, against the in-process simulator: what nghttp2 does with
/// requests it holds in its queue, which the worker above never sees.
@Suite(.serialized, .enabled(if: EnginesUnderTest.includesNghttp2)) struct HTTP2ClientTests {
    /// `unique`: flag the path as a value that changes per request (HTTP2Client.h).
    static func fields(path: String, unique: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        func add(_ name: String, _ value: String, unique: Bool = false) {
            for (i, part) in [name, value].enumerated() {
                out.append(UInt8(part.utf8.count >> 8) | (i == 0 && unique ? 0x80 : 0)); out.append(UInt8(part.utf8.count & 0xFF)); out += Array(part.utf8)
            }
        }
        add(":path", path, unique: unique)
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

    /// Fields flagged as unique per request stay out of HPACK's dynamic table: after the first
    /// request it holds the shared fields (topic, push type) and no longer changes. Unflagged,
    /// each request's apns-id is added (nghttp2 leaves :path and authorization out by itself) and
    /// the table fills up, evicting the shared fields.
    @Test func valuesUniquePerRequestStayOutOfTheHpackTable() throws {
        let f = try StreamingSenderTests.Fixture()
        defer { try? f.sim.shutdown() }
        let jwt = try f.token().current()
        var sizes: [Bool: (first: Int, last: Int)] = [:]
        for unique in [true, false] {
            let c = try Self.connect(f)
            defer { h2_close(c.connection); h2_tls_free(c.tls) }
            #expect(Self.submit(c.connection, 1, jwt: jwt, unique: unique) > 0)
            #expect(Self.collect(c.connection, count: 1).count == 1)
            let first = h2_hpack_table_size(c.connection)
            for i in 2...30 { #expect(Self.submit(c.connection, i, jwt: jwt, unique: unique) > 0) }
            let answers = Self.collect(c.connection, count: 29)
            #expect(answers.count == 29 && answers.values.allSatisfy { $0.status == 200 }, "\(answers)")
            sizes[unique] = (first, h2_hpack_table_size(c.connection))
        }
        let flagged = try #require(sizes[true]), plain = try #require(sizes[false])
        #expect(flagged.first > 0 && flagged.last == flagged.first, "\(flagged)")
        #expect(plain.last > flagged.last + 1_000, "unflagged, the table fills with paths and ids: \(plain)")
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

    static func submit(_ c: OpaquePointer, _ i: Int, jwt: String, unique: Bool = false) -> Int32 {
        var block = fields(path: "/3/device/" + String(format: "%064x", i), unique: unique)
        for (j, part) in ["authorization", "bearer \(jwt)", "apns-id", String(format: "00000000-0000-5000-8000-%012x", i)].enumerated() {
            block.append(UInt8(part.utf8.count >> 8) | (j == 2 && unique ? 0x80 : 0)); block.append(UInt8(part.utf8.count & 0xFF)); block += Array(part.utf8)
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
