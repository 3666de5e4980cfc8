import Foundation
import HeraldCore
import HeraldDelivery
@testable import HeraldSimulator
import HeraldTestSupport
import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing

/// The connection handler at the frame level, with no sockets: bytes pass between a client and
/// a server `EmbeddedChannel` (as swift-nio-http2's own tests do), so the frames curl hides —
/// SETTINGS, GOAWAY debug data, WINDOW_UPDATE — can be asserted on.
@Suite struct SimulatorFrameTests {
    final class FrameRecorder: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        var frames: [HTTP2Frame] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { frames.append(unwrapInboundIn(data)) }
    }

    /// A client `NIOHTTP2Handler` wired to the simulator's server handlers.
    final class Pair {
        let key = TestKey()
        let client = EmbeddedChannel()
        let server = EmbeddedChannel()
        let recorder = FrameRecorder()
        let log: SimulatorRequestLog
        var nextStream = 1

        init(certificateMode: Bool = false, _ configure: (inout SimulatorConfiguration) -> Void = { _ in }) throws {
            var config = SimulatorConfiguration(teamId: TestKey.teamId, keyId: TestKey.keyId, publicKeyPEM: key.publicKeyPEM)
            config.bundleId = SimulatorHarness.bundle
            config.maxConcurrentStreams = 250
            configure(&config)
            log = try SimulatorRequestLog()
            let policy = ConnectionPolicy(behavior: try APNsBehavior(configuration: config), log: log, faults: config.faults,
                                          maxConcurrentStreams: config.maxConcurrentStreams, acceptsProviderTokens: !certificateMode)
            try client.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client))
            try client.pipeline.syncOperations.addHandler(recorder)
            try server.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: policy.connectionConfiguration(startsWithOneStream: !certificateMode),
                                                                          streamConfiguration: policy.streamConfiguration))
            try server.pipeline.syncOperations.addHandler(APNsConnectionHandler(policy: policy, connection: SimulatorConnection(id: 1)))
            let address = try SocketAddress(ipAddress: "127.0.0.1", port: 443)
            try server.connect(to: address).wait()
            try client.connect(to: address).wait()
            try exchange()
        }

        /// Moves bytes both ways until neither side has anything to send.
        func exchange() throws {
            var moved = true
            while moved {
                moved = false
                while let bytes = try client.readOutbound(as: ByteBuffer.self) {
                    if server.isActive { try server.writeInbound(bytes) }
                    moved = true
                }
                while let bytes = try server.readOutbound(as: ByteBuffer.self) {
                    try client.writeInbound(bytes)
                    moved = true
                }
            }
        }

        func jwt(key signingKey: TestKey? = nil) throws -> String {
            try ProviderToken(privateKeyPEM: (signingKey ?? key).privateKeyPEM, source: "test", teamId: TestKey.teamId, keyId: TestKey.keyId).current()
        }

        /// Opens a stream with a valid request's headers; `end` sends the body and ends it.
        @discardableResult
        func open(jwt: String, bodyFollows: Bool = true) -> HTTP2StreamID {
            let id = HTTP2StreamID(nextStream)
            nextStream += 2
            let headers: [(String, String)] = [(":method", "POST"), (":scheme", "https"), (":authority", "localhost"),
                                               (":path", "/3/device/" + Push.token(nextStream)), ("authorization", "bearer " + jwt),
                                               ("apns-topic", SimulatorHarness.bundle)]
            client.write(HTTP2Frame(streamID: id, payload: .headers(.init(headers: .init(headers), endStream: false))), promise: nil)
            if !bodyFollows { client.flush() }
            return id
        }

        func end(_ id: HTTP2StreamID, body: [UInt8] = Array(#"{"aps":{}}"#.utf8)) throws {
            var rest = body[...]
            repeat {
                let chunk = rest.prefix(16_384)
                rest = rest.dropFirst(chunk.count)
                let data = HTTP2Frame.FramePayload.Data(data: .byteBuffer(client.allocator.buffer(bytes: chunk)), endStream: rest.isEmpty)
                client.write(HTTP2Frame(streamID: id, payload: .data(data)), promise: nil)
            } while !rest.isEmpty
            client.flush()
            try exchange()
        }

        func request(jwt: String, body: [UInt8] = Array(#"{"aps":{}}"#.utf8)) throws -> HTTP2StreamID {
            let id = open(jwt: jwt)
            try end(id, body: body)
            return id
        }

        var maxConcurrentStreamsSettings: [UInt32] {
            recorder.frames.flatMap { frame -> [UInt32] in
                guard case .settings(.settings(let settings)) = frame.payload else { return [] }
                return settings.filter { $0.parameter == .maxConcurrentStreams }.map { UInt32($0.value) }
            }
        }

        func status(of id: HTTP2StreamID) -> String? {
            for frame in recorder.frames where frame.streamID == id {
                if case .headers(let h) = frame.payload { return h.headers.first(name: ":status") }
            }
            return nil
        }

        var goaway: (lastStreamID: HTTP2StreamID, errorCode: HTTP2ErrorCode, debug: String)? {
            for frame in recorder.frames {
                if case .goAway(let last, let code, let data) = frame.payload {
                    return (last, code, data.map { String(buffer: $0) } ?? "")
                }
            }
            return nil
        }
    }

    @Test func aTokenConnectionStartsAtOneStreamUntilTheFirstValidToken() throws {
        let p = try Pair()
        #expect(p.maxConcurrentStreamsSettings == [1], "Apple: one stream until a request with a valid token")
        let forged = try p.request(jwt: try p.jwt(key: TestKey()))
        #expect(p.status(of: forged) == "403")
        #expect(p.maxConcurrentStreamsSettings == [1], "an invalid token raises nothing")
        let valid = try p.request(jwt: try p.jwt())
        #expect(p.status(of: valid) == "200")
        #expect(p.maxConcurrentStreamsSettings == [1, 250])
        _ = try p.request(jwt: try p.jwt())
        #expect(p.maxConcurrentStreamsSettings == [1, 250], "raised once")
    }

    @Test func aCertificateConnectionStartsAtTheConfiguredLimit() throws {
        let p = try Pair(certificateMode: true)
        #expect(p.maxConcurrentStreamsSettings == [250])
    }

    @Test func goawayCarriesAJSONReasonAndTheLastStreamStillAnswered() throws {
        let p = try Pair { $0.faults.goawayAfter = 2; $0.faults.goawayReason = "Shutdown" }
        let jwt = try p.jwt()
        let first = try p.request(jwt: jwt)
        let open = p.open(jwt: jwt, bodyFollows: false)       // stream 3: headers only, body later
        try p.exchange()
        let second = try p.request(jwt: jwt)                   // stream 5: the 2nd answer, then GOAWAY
        #expect(p.status(of: first) == "200" && p.status(of: second) == "200")
        let goaway = try #require(p.goaway)
        #expect(goaway.errorCode == .noError)
        #expect(goaway.lastStreamID == second, "every stream opened so far is covered")
        #expect(goaway.debug == #"{"reason":"Shutdown"}"#)
        #expect(p.server.isActive, "stream 3 is still open")
        try p.end(open)
        #expect(p.status(of: open) == "200", "a covered stream is still answered")
        p.server.embeddedEventLoop.run()   // the close is issued on the event loop's next turn
        #expect(!p.server.isActive, "and then the connection closes")
        #expect(p.log.entries().map(\.fault) == [nil, "goaway", nil])
    }

    @Test func aBodyLargerThanTheWindowIsReadThroughWindowUpdates() throws {
        let p = try Pair()
        let id = try p.request(jwt: try p.jwt(), body: Array(repeating: UInt8(ascii: " "), count: 200_000))
        #expect(p.status(of: id) == "413")
        #expect(p.log.entries().first?.reason == "PayloadTooLarge")
        let updates = p.recorder.frames.filter { if case .windowUpdate = $0.payload { return true } else { return false } }
        #expect(updates.contains { $0.streamID == id } && updates.contains { $0.streamID == .rootStream })
    }

    @Test func latencyHoldsTheAnswerUntilItsTime() throws {
        let p = try Pair { $0.faults.latencyMs = 50 }
        let id = try p.request(jwt: try p.jwt())
        #expect(p.status(of: id) == nil, "not answered before the latency elapsed")
        // Logged as its answer leaves: an answer a cut drops is logged closed_after_processing instead.
        #expect(p.log.count == 0, "logged when the answer leaves, not before")
        p.server.embeddedEventLoop.advanceTime(by: .milliseconds(49))
        try p.exchange()
        #expect(p.status(of: id) == nil)
        p.server.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        try p.exchange()
        #expect(p.status(of: id) == "200")
        #expect(p.log.entries().map(\.outcome) == [.answered])
    }

    @Test func closeAfterProcessingLogsTheVerdictAndNeverAnswers() throws {
        let p = try Pair { $0.faults.closeAfter = 2; $0.faults.closeMode = .after }
        let jwt = try p.jwt()
        let first = try p.request(jwt: jwt)
        let second = try p.request(jwt: jwt)
        #expect(p.status(of: first) == "200")
        #expect(p.status(of: second) == nil && p.goaway == nil, "no answer, no GOAWAY")
        #expect(!p.server.isActive)
        let cut = try #require(p.log.entries().last)
        #expect(cut.outcome == .closedAfterProcessing && cut.status == 200)
    }
}
