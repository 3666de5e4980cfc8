import Foundation
import NIOCore
import NIOHTTP2

/// Serves one HTTP/2 stream: gathers HEADERS and DATA frames into a `SimulatorRequest`, asks
/// the behaviour for a verdict when the client ends the stream, logs it and answers with
/// HEADERS (`:status`, `apns-id`) and, for errors, a JSON DATA frame.
///
/// Works on `HTTP2Frame.FramePayload` directly (no HTTP/1 translation) so that later fault
/// injection can send whatever frames it needs.
final class APNsStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let behavior: any SimulatorBehavior
    private let connection: SimulatorConnection
    private let log: SimulatorRequestLog
    private var streamID = 0
    /// The first HEADERS block, pseudo-headers included; nil until it arrives.
    private var requestHeaders: [(name: String, value: String)]?
    private var body: [UInt8] = []
    private var bodyLength = 0
    private var answered = false

    init(behavior: any SimulatorBehavior, connection: SimulatorConnection, log: SimulatorRequestLog) {
        self.behavior = behavior
        self.connection = connection
        self.log = log
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if let id = try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID) {
            streamID = Int(id)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            // A second HEADERS block is a trailer section: ignored except for END_STREAM.
            if requestHeaders == nil { requestHeaders = frame.headers.map { ($0.name, $0.value) } }
            if frame.endStream { answer(context: context) }
        case .data(let frame):
            if case .byteBuffer(var buffer) = frame.data {
                bodyLength += buffer.readableBytes
                let room = SimulatorRequest.bodyKeepLimit - body.count
                if room > 0, let bytes = buffer.readBytes(length: min(room, buffer.readableBytes)) {
                    body.append(contentsOf: bytes)
                }
            }
            if frame.endStream { answer(context: context) }
        default:
            break
        }
    }

    private func answer(context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        var method = ""
        var path = ""
        var fields: [(name: String, value: String)] = []
        for (name, value) in requestHeaders ?? [] {
            switch name {
            case ":method": method = value
            case ":path": path = value
            case _ where name.hasPrefix(":"): continue
            default: fields.append((name, value))
            }
        }
        let request = SimulatorRequest(method: method, path: path, headers: fields, body: body, bodyLength: bodyLength)
        let verdict = behavior.respond(to: request, on: connection, now: Date())

        // Apple: APNs echoes a valid apns-id and otherwise generates one.
        let apnsId: String
        if let sent = request.header("apns-id"), RequestValidator.isCanonicalUUID(sent) {
            apnsId = sent
        } else {
            apnsId = UUID().uuidString.lowercased()
        }
        log.append(SimulatorRequestLog.Entry(connection: connection.id, stream: streamID, request: request,
                                             verdict: verdict, apnsId: apnsId))

        var headers = [(":status", String(verdict.status)), ("apns-id", apnsId)]
        let payload = verdict.body
        if let payload {
            headers.append(("content-type", "application/json"))
            headers.append(("content-length", String(payload.count)))
        }
        // `.init(headers)` is NIOHPACK's HPACKHeaders, reached through NIOHTTP2's API.
        context.write(wrapOutboundOut(.headers(.init(headers: .init(headers), endStream: payload == nil))), promise: nil)
        if let payload {
            let buffer = context.channel.allocator.buffer(bytes: payload)
            context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
        }
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream error (reset, protocol violation) ends only this stream.
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension APNsStreamHandler: Sendable {}
