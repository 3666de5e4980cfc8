import Foundation
import HeraldCore
import NIOCore
import NIOHTTP2

/// Serves one HTTP/2 connection at the frame level: gathers each stream's HEADERS and DATA
/// into a `SimulatorRequest`, asks the behaviour for a verdict when the stream ends, logs it and
/// answers with HEADERS (`:status`, `apns-id`) plus, for errors, a JSON DATA frame. It also
/// injects the connection faults (latency, GOAWAY, abrupt close) and raises
/// MAX_CONCURRENT_STREAMS after the first authenticated request.
///
/// Frames rather than NIO's per-stream child channels: a child channel per request (a pipeline,
/// promises, activation, teardown) costs more than the whole APNs validation, and the faults are
/// connection-level acts anyway. The price is doing flow control here (WINDOW_UPDATE as bodies
/// are consumed), which the multiplexer would otherwise do.
final class APNsConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct PendingStream {
        var method = ""
        var path = ""
        var authority: String?
        var fields: [(name: String, value: String)] = []
        var body: [UInt8] = []
        var bodyLength = 0
        var unacknowledged = 0
    }

    private let policy: ConnectionPolicy
    private let connection: SimulatorConnection
    /// Streams whose request has not ended yet.
    private var streams: [HTTP2StreamID: PendingStream] = [:]
    /// Requests ended whose answer waits for a latency fault.
    private var delayedAnswers = 0
    private var requests = 0
    private var highestStreamID = HTTP2StreamID.rootStream
    private var windowRaised = false
    private var connectionUnacknowledged = 0
    private var streamsRaised = false
    private var goingAway = false
    private var cut = false

    init(policy: ConnectionPolicy, connection: SimulatorConnection) {
        self.policy = policy
        self.connection = connection
    }

    func handlerAdded(context: ChannelHandlerContext) {
        policy.log.connectionOpened()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !cut else { return }
        let frame = unwrapInboundIn(data)
        let id = frame.streamID
        switch frame.payload {
        case .headers(let headers):
            if streams[id] == nil && id > highestStreamID && goingAway {
                // A stream the client opened before it read our GOAWAY, above its last stream id:
                // "the sender of the GOAWAY frame … has not processed" it (RFC 9113 §6.8), and the
                // client may retry it elsewhere; processing it here would answer it twice.
                context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.refusedStream))), promise: nil)
                return
            }
            if streams[id] == nil && id > highestStreamID {
                // A new request. (A second HEADERS block is a trailer section: only END_STREAM matters.)
                highestStreamID = id
                var stream = PendingStream()
                stream.fields.reserveCapacity(8)
                for (name, value, _) in headers.headers {
                    switch name {
                    case ":method": stream.method = value
                    case ":path": stream.path = value
                    case ":authority": stream.authority = value
                    case _ where name.hasPrefix(":"): continue
                    default: stream.fields.append((name, value))
                    }
                }
                streams[id] = stream
                if !windowRaised {
                    windowRaised = true
                    let increment = ConnectionPolicy.connectionWindow - 65_535
                    context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
                }
            }
            if headers.endStream, let stream = streams.removeValue(forKey: id) { requestEnded(id, stream, context: context) }
        case .data(let payload):
            // Taken out of the dictionary while it grows, so its body is not copied on write.
            guard var stream = streams.removeValue(forKey: id) else { return }
            var consumed = 0
            if case .byteBuffer(let buffer) = payload.data {
                consumed = buffer.readableBytes
                stream.bodyLength += consumed
                let room = SimulatorRequest.bodyKeepLimit - stream.body.count
                if room > 0 { stream.body.append(contentsOf: buffer.readableBytesView.prefix(room)) }
            }
            consumed += payload.paddingBytes.map { $0 + 1 } ?? 0
            acknowledge(consumed, on: id, stream: &stream, ended: payload.endStream, context: context)
            if payload.endStream { requestEnded(id, stream, context: context) } else { streams[id] = stream }
        case .rstStream:
            streams.removeValue(forKey: id)
        case .ping(_, ack: false):
            // A client checking the connection; NIOHTTP2Handler has queued the ACK. Logged so a test
            // can see a client keep its connection alive.
            policy.log.pingReceived(connection: connection.id)
        default:
            // SETTINGS are acknowledged by NIOHTTP2Handler; the rest needs nothing here.
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let closed = event as? StreamClosedEvent {
            streams.removeValue(forKey: closed.streamID)
            closeIfQuiet(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // NIOHTTP2Handler has already reset a stream that broke the protocol; that ends only the stream.
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            streams.removeValue(forKey: streamError.streamID)
            return
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        policy.log.connectionClosed()
        cut = true
        streams.removeAll()
        context.fireChannelInactive()
    }

    // MARK: flow control

    /// WINDOW_UPDATEs for body bytes consumed: per stream past a threshold (only if more may
    /// come), per connection once a quarter of the window is used.
    private func acknowledge(_ bytes: Int, on id: HTTP2StreamID, stream: inout PendingStream, ended: Bool, context: ChannelHandlerContext) {
        guard bytes > 0 else { return }
        connectionUnacknowledged += bytes
        if connectionUnacknowledged >= ConnectionPolicy.connectionWindow / 4 {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: connectionUnacknowledged))), promise: nil)
            connectionUnacknowledged = 0
        }
        guard !ended else { return }
        stream.unacknowledged += bytes
        if stream.unacknowledged >= ConnectionPolicy.streamUpdateThreshold {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .windowUpdate(windowSizeIncrement: stream.unacknowledged))), promise: nil)
            stream.unacknowledged = 0
        }
    }

    // MARK: answering

    private func requestEnded(_ id: HTTP2StreamID, _ stream: PendingStream, context: ChannelHandlerContext) {
        requests += 1
        let number = requests
        var request = SimulatorRequest(method: stream.method, path: stream.path, headers: stream.fields,
                                       body: stream.body, bodyLength: stream.bodyLength)
        request.authority = stream.authority
        let streamNumber = Int(id)
        let log = policy.log
        let connectionId = connection.id
        let certificate = connection.clientCertificate
        let cutsHere = policy.faults.closeAfter == number

        if cutsHere && policy.faults.closeMode == .before {
            log.append(status: nil, reason: nil, outcome: .closedBeforeProcessing, fault: "close_before",
                       entry: .init(connection: connectionId, stream: streamNumber, request: request, verdict: nil,
                                    apnsId: nil, outcome: .closedBeforeProcessing, fault: "close_before", clientCertificate: certificate))
            cutConnection(context: context)
            return
        }

        let verdict = policy.behavior.respond(to: request, on: connection, now: Date())
        if verdict.authenticated && !streamsRaised {
            streamsRaised = true
            if policy.startsWithOneStream(connection) {
                let raise = HTTP2Frame.FramePayload.settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: policy.maxConcurrentStreams)]))
                context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: raise)), promise: nil)
            }
        }
        // Apple: APNs echoes a valid apns-id and otherwise generates one.
        let apnsId: String
        if let sent = request.header(request.usesRequestId ? "apns-request-id" : "apns-id"), RequestValidator.isCanonicalUUID(sent) {
            apnsId = sent
        } else {
            apnsId = UUID().uuidString.lowercased()
        }
        // Apple sends apns-unique-id in the development environment only; the simulator always does,
        // so reports can be checked against the request log.
        let uniqueId = UUID().uuidString.lowercased()

        if cutsHere {
            log.append(status: verdict.status, reason: verdict.reason, outcome: .closedAfterProcessing, fault: "close_after",
                       entry: .init(connection: connectionId, stream: streamNumber, request: request, verdict: verdict,
                                    apnsId: apnsId, outcome: .closedAfterProcessing, fault: "close_after", clientCertificate: certificate))
            cutConnection(context: context)
            return
        }

        let goesAway = policy.faults.goawayAfter == number
        let fault = verdict.fault ?? (goesAway ? "goaway" : nil)
        // Logged when the answer is written: an answer a latency fault holds back and a cut then
        // drops was processed but never answered, and the log says so (closed_after_processing),
        // so a client's resend of it is not taken for a request processed twice without cause.
        let logged = { (outcome: SimulatorRequestLog.Outcome, fault: String?) in
            log.append(status: verdict.status, reason: verdict.reason, outcome: outcome, fault: fault, entry: {
                var e = SimulatorRequestLog.Entry(connection: connectionId, stream: streamNumber, request: request, verdict: verdict,
                                                  apnsId: apnsId, outcome: outcome, fault: fault, clientCertificate: certificate)
                if outcome == .answered { e.uniqueId = uniqueId }
                return e
            }())
        }

        let delay = policy.latency(connection: connectionId, stream: streamNumber)
        if delay == 0 {
            logged(.answered, fault)
            answer(id, verdict: verdict, apnsId: apnsId, uniqueId: uniqueId, requestId: request.usesRequestId, context: context)
            if goesAway { goAway(context: context) }
            return
        }
        delayedAnswers += 1
        log.awaitingLatency(true)
        context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(delay))) {
            self.delayedAnswers -= 1
            guard !self.cut else {
                logged(.closedAfterProcessing, fault ?? "close_after")
                log.awaitingLatency(false)
                return
            }
            logged(.answered, fault)
            log.awaitingLatency(false)
            self.answer(id, verdict: verdict, apnsId: apnsId, uniqueId: uniqueId, requestId: request.usesRequestId, context: context)
            if goesAway { self.goAway(context: context) }
            context.flush()
            self.closeIfQuiet(context: context)
        }
    }

    private func answer(_ id: HTTP2StreamID, verdict: SimulatorVerdict, apnsId: String, uniqueId: String, requestId: Bool,
                        context: ChannelHandlerContext) {
        let body = verdict.body
        var fields = [(":status", Self.statusText(verdict.status)), (requestId ? "apns-request-id" : "apns-id", apnsId)]
        // Apple: apns-unique-id on a successful broadcast, and on device pushes (development only).
        if !requestId || (verdict.status == 200 && verdict.payload == nil) { fields.append(("apns-unique-id", uniqueId)) }
        for (name, value) in verdict.extraHeaders.sorted(by: { $0.key < $1.key }) { fields.append((name, value)) }
        if let body {
            fields.append(("content-type", "application/json"))
            fields.append(("content-length", String(body.count)))
        }
        let headers = HTTP2Frame.FramePayload.Headers(headers: .init(fields), endStream: body == nil)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(headers))), promise: nil)
        if let body {
            let data = HTTP2Frame.FramePayload.Data(data: .byteBuffer(context.channel.allocator.buffer(bytes: body)), endStream: true)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(data))), promise: nil)
        }
    }

    private static let statusTexts: [Int: String] = Dictionary(uniqueKeysWithValues: [200, 201, 204, 400, 403, 404, 405, 410, 413, 429, 500, 503].map { ($0, String($0)) })
    private static func statusText(_ status: Int) -> String { statusTexts[status] ?? String(status) }

    // MARK: connection faults

    /// GOAWAY as APNs sends it: NO_ERROR, last stream the highest one opened (those are still
    /// answered), and `{"reason":"…"}` as debug data. The connection closes once they are.
    private func goAway(context: ChannelHandlerContext) {
        guard !goingAway else { return }
        goingAway = true
        var debug: [UInt8] = Array("{\"reason\":".utf8)
        JSONEscaping.appendQuoted(policy.faults.goawayReason.rawValue, to: &debug)
        debug.append(UInt8(ascii: "}"))
        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: highestStreamID, errorCode: .noError,
                                                                        opaqueData: context.channel.allocator.buffer(bytes: debug)))
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        closeIfQuiet(context: context)
    }

    /// After GOAWAY, closes once no request is pending. The answers are flushed first; NIOSSL
    /// then sends close_notify behind them, so nothing written is lost.
    private func closeIfQuiet(context: ChannelHandlerContext) {
        guard goingAway, !cut, streams.isEmpty, delayedAnswers == 0 else { return }
        cut = true
        // On the next turn of the event loop: NIOHTTP2Handler reports a stream closed (the event
        // that calls this) while it is still writing the answer's HEADERS, and a close issued
        // from inside that write fails the frames not yet passed down ("I/O on closed channel"):
        // the last answers before a GOAWAY would never leave.
        let loop = context.eventLoop.assumeIsolated()
        loop.execute {
            context.flush()
            context.close(promise: nil)
        }
    }

    /// An abrupt TCP close: RST (SO_LINGER 0), no GOAWAY, no TLS close_notify. The close starts
    /// at `SocketEdgeHandler`, below TLS, so NIOSSL cannot turn it into a polite shutdown.
    private func cutConnection(context: ChannelHandlerContext) {
        cut = true
        streams.removeAll()
        _ = (context.channel as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0))
        if let edge = try? context.pipeline.syncOperations.context(handlerType: SocketEdgeHandler.self) {
            edge.close(promise: nil)
        } else {
            context.close(promise: nil)
        }
    }
}

@available(*, unavailable)
extension APNsConnectionHandler: Sendable {}

/// The first handler of every connection (nearest the socket): a pass-through whose context is
/// where an abrupt close starts.
final class SocketEdgeHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
}

@available(*, unavailable)
extension SocketEdgeHandler: Sendable {}
