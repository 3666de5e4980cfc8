import CHTTP2Client
import Foundation
import HeraldSimulator
import HeraldTestSupport
import Testing

/// CHTTP2Client's connection on its own, against the in-process simulator: what nghttp2 does with
/// requests it holds in its queue, which the worker above never sees.
@Suite(.serialized) struct HTTP2ClientTests {
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
            var kind = H2_OK
            return h2_tls_new(&o, &kind, &err, err.count)
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

    static func collect(_ c: OpaquePointer, count: Int) -> [UInt64: (status: Int32, complete: Int32, notSent: Int32, resetCode: UInt32)] {
        var err = [CChar](repeating: 0, count: 512)
        var answers: [UInt64: (status: Int32, complete: Int32, notSent: Int32, resetCode: UInt32)] = [:]
        _ = waitUntil(timeout: 10) {
            var p = pollfd(fd: h2_fd(c), events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, 20)
            _ = h2_turn(c, &err, err.count)
            var n = 0
            if let a = h2_answers(c, &n) {
                for i in 0..<n { answers[a[i].cookie] = (a[i].status, a[i].complete, a[i].not_sent, a[i].reset_code) }
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
        // Either way the server processed neither: nghttp2 held them back (never sent), or, when
        // their HEADERS left before the GOAWAY was read (timing, e.g. under a sanitizer), the server
        // refused them. RFC 9113 §8.7: REFUSED_STREAM (0x7) "indicates that the stream was closed
        // prior to any processing having occurred". https://www.rfc-editor.org/rfc/rfc9113#section-8.7
        let neverProcessed = { (a: (status: Int32, complete: Int32, notSent: Int32, resetCode: UInt32)?) -> Bool in
            guard let a, a.status == 0, a.complete == 0 else { return false }
            return (a.notSent == 1 && a.resetCode == 0) || (a.notSent == 0 && a.resetCode == 7)
        }
        #expect(neverProcessed(answers[2]) && neverProcessed(answers[3]), "\(answers)")
        #expect(f.sim.requestLog.entries().count == 1, "the two held back never reached the server")
        #expect(h2_open_streams(c.connection) == 0)
    }

    /// Memory runs out at each point of a batch (one allocation fails, or every one from there on):
    /// by CHTTP2Client (the stream, its body, the room for its answer, the answer's body) or by
    /// nghttp2 (its session's allocator is CHTTP2Client's). A request h2_submit refuses is refused
    /// with NGHTTP2_ERR_NOMEM; every request it took is answered exactly once, none hangs, and the
    /// connection then closes cleanly. Half the tokens are bad, so answers carry a body to keep.
    @Test func everyRequestTakenIsAnsweredOnceWhenMemoryRunsOut() throws {
        let batch = 12
        let f = try StreamingSenderTests.Fixture {
            $0.tokenRules.badTokenPrefixes = (1...batch).filter { $0 % 2 == 0 }.map { String(format: "%064x", $0) }
        }
        defer { try? f.sim.shutdown() }
        let jwt = try f.token().current()
        var refusedForMemory = 0, answersLostForMemory = 0, connectionsLostForMemory = 0, untouched = 0
        for count in [1, -1] {
            // From the first allocation on, until a batch runs with no failure: every point is tried.
            var after = 0, done = false
            while !done && after < 2_000 {
                defer { after += 1 }
                let c = try Self.connect(f)
                h2_test_fail_allocs(after, count)
                var taken = Set<UInt64>()
                for i in 1...batch {
                    let id = Self.submit(c.connection, i, jwt: jwt)
                    if id > 0 { taken.insert(UInt64(i)); continue }
                    #expect(id == -901 || id == -516, "NGHTTP2_ERR_NOMEM, or START_STREAM_NOT_ALLOWED once the connection failed: \(id)")
                    if id == -901 { refusedForMemory += 1 }
                }
                var times: [UInt64: Int] = [:]
                var state: Int32 = 0
                var err = [CChar](repeating: 0, count: 512)
                let deadline = Date().addingTimeInterval(10)
                while Date() < deadline {
                    var p = pollfd(fd: h2_fd(c.connection), events: Int16(POLLIN), revents: 0)
                    _ = poll(&p, 1, 20)
                    state = h2_turn(c.connection, &err, err.count)
                    var n = 0
                    if let a = h2_answers(c.connection, &n) {
                        for i in 0..<n {
                            times[a[i].cookie, default: 0] += 1
                            if a[i].no_memory != 0 { answersLostForMemory += 1; #expect(a[i].lost == 1 && a[i].complete == 0) }
                        }
                    }
                    h2_clear_answers(c.connection)
                    if state != 0 || Set(times.keys) == taken { break }
                }
                if state < 0, String(cString: err).contains("out of memory") { connectionsLostForMemory += 1 }
                if h2_test_failed_allocs() == 0 {
                    untouched += 1
                    done = true
                }
                #expect(Set(times.keys) == taken && times.values.allSatisfy { $0 == 1 },
                        "after \(after), failing \(count): every request taken is answered once: \(times) of \(taken.sorted())")
                #expect(h2_open_streams(c.connection) == 0)
                // Closed with memory still failing: the GOAWAY it may not manage to send is not needed.
                h2_close(c.connection)
                h2_test_fail_allocs(0, 0)
                h2_tls_free(c.tls)
            }
        }
        // The failure points had each of these outcomes somewhere (the test reached what it tests).
        #expect(refusedForMemory > 0 && answersLostForMemory > 0 && connectionsLostForMemory > 0 && untouched > 0,
                "\(refusedForMemory) refused, \(answersLostForMemory) answers lost, \(connectionsLostForMemory) connections lost, \(untouched) untouched")
    }

    /// Memory running out while connecting ends in no connection and H2_ERR_MEMORY, never a hang.
    @Test func memoryRunningOutWhileConnectingIsAMemoryFailure() throws {
        let f = try StreamingSenderTests.Fixture()
        defer { try? f.sim.shutdown() }
        let ca = Array(f.sim.caCertificatePEM.utf8)
        var err = [CChar](repeating: 0, count: 512)
        var kind = H2_OK
        let tls = try #require(ca.withUnsafeBufferPointer { p -> OpaquePointer? in
            var o = h2_tls_options()
            o.ca_pem = p.baseAddress
            o.ca_pem_len = p.count
            return h2_tls_new(&o, &kind, &err, err.count)
        })
        defer { h2_tls_free(tls) }
        var failed = 0
        // From the first allocation on, until h2_connect makes no more than `after`.
        for after in 0..<2_000 {
            h2_test_fail_allocs(after, -1)
            let c = h2_connect(tls, "127.0.0.1", String(f.sim.port), "127.0.0.1:\(f.sim.port)", nil, 5_000, 60, &kind, &err, err.count)
            let untouched = h2_test_failed_allocs() == 0
            h2_test_fail_allocs(0, 0)
            if let c {
                h2_close(c)
                if untouched { break }
                continue
            }
            failed += 1
            #expect(kind == H2_ERR_MEMORY, "after \(after): \(kind) \(String(cString: err))")
        }
        #expect(failed > 0)
    }

    /// Only the server's certificate failing verification is a trust failure (herald stops the run
    /// on "TLS trust:"). A CA that cannot be used, or memory running out, while the TLS context is
    /// built is not: no server has been asked.
    @Test func aTLSContextThatCannotBeBuiltIsNotATrustFailure() throws {
        var err = [CChar](repeating: 0, count: 512)
        var kind = H2_OK
        let garbage = Array("not a certificate".utf8)
        let bad = garbage.withUnsafeBufferPointer { p -> OpaquePointer? in
            var o = h2_tls_options()
            o.ca_pem = p.baseAddress
            o.ca_pem_len = p.count
            return h2_tls_new(&o, &kind, &err, err.count)
        }
        #expect(bad == nil)
        #expect(kind == H2_ERR_TLS_SETUP, "\(kind)")
        #expect(String(cString: err).hasPrefix("no certificate in the CA text") && !String(cString: err).contains("TLS trust"), "\(String(cString: err))")

        let ca = Array(try SimulatorCertificateAuthority(commonName: "test CA").certificatePEM.utf8)
        h2_test_fail_allocs(0, 1)
        let starved = ca.withUnsafeBufferPointer { p -> OpaquePointer? in
            var o = h2_tls_options()
            o.ca_pem = p.baseAddress
            o.ca_pem_len = p.count
            return h2_tls_new(&o, &kind, &err, err.count)
        }
        h2_test_fail_allocs(0, 0)
        #expect(starved == nil)
        #expect(kind == H2_ERR_MEMORY && !String(cString: err).contains("TLS trust"), "\(kind) \(String(cString: err))")
    }
}
