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

    /// The server allows one stream and goes away after its first request. Three requests are
    /// submitted: nghttp2 sends the first and holds the others, whose streams it opens only when
    /// their HEADERS leave; the GOAWAY then strands them. Each is still answered, as never sent.
    @Test func requestsQueuedWhenAGoawayArrivesAreAnsweredAsNeverSent() throws {
        let f = try StreamingSenderTests.Fixture {
            $0.maxConcurrentStreams = 1
            $0.faults.goawayAfter = 1
        }
        defer { try? f.sim.shutdown() }
        let jwt = try f.token().current()
        var err = [CChar](repeating: 0, count: 512)
        let ca = Array(f.sim.caCertificatePEM.utf8)
        let tls = try #require(ca.withUnsafeBufferPointer { p -> OpaquePointer? in
            var o = h2_tls_options()
            o.ca_pem = p.baseAddress
            o.ca_pem_len = p.count
            return h2_tls_new(&o, &err, err.count)
        })
        defer { h2_tls_free(tls) }
        var kind = H2_OK
        let c = try #require(h2_connect(tls, "127.0.0.1", String(f.sim.port), "127.0.0.1:\(f.sim.port)", 5_000, 60, &kind, &err, err.count),
                             "\(String(decoding: err.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        defer { h2_close(c) }
        // The server's SETTINGS (one stream) first: until they are read nghttp2 assumes 100.
        #expect(waitUntil(timeout: 5) { h2_turn(c, &err, err.count) == 0 && h2_remote_max_streams(c) == 1 })
        let body = Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        for i in 1...3 {
            var block = Self.fields(path: "/3/device/" + String(format: "%064x", i))
            for part in ["authorization", "bearer \(jwt)", "apns-id", String(format: "00000000-0000-5000-8000-%012x", i)] {
                block.append(UInt8(part.utf8.count >> 8)); block.append(UInt8(part.utf8.count & 0xFF)); block += Array(part.utf8)
            }
            let id = block.withUnsafeBufferPointer { b in body.withUnsafeBufferPointer { h2_submit(c, b.baseAddress, b.count, $0.baseAddress, $0.count, UInt64(i)) } }
            #expect(id > 0)
        }
        var answers: [UInt64: (status: Int32, complete: Int32, notSent: Int32)] = [:]
        _ = waitUntil(timeout: 10) {
            _ = h2_turn(c, &err, err.count)
            var n = 0
            if let a = h2_answers(c, &n) {
                for i in 0..<n { answers[a[i].cookie] = (a[i].status, a[i].complete, a[i].not_sent) }
            }
            h2_clear_answers(c)
            return answers.count == 3
        }
        #expect(answers.count == 3, "every request is answered, none left hanging: \(answers)")
        #expect(answers[1]?.status == 200 && answers[1]?.complete == 1)
        #expect(answers[2]?.notSent == 1 && answers[3]?.notSent == 1, "\(answers)")
        #expect(f.sim.requestLog.entries().count == 1, "the two held back never reached the server")
        #expect(h2_open_streams(c) == 0)
    }
}
