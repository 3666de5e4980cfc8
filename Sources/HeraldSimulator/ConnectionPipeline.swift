import NIOCore
import NIOHTTP2
import NIOSSL

/// Builds each accepted connection's pipeline: TLS, ALPN (h2 or close), the HTTP/2 connection
/// handler and a stream multiplexer that gives every stream its own `APNsStreamHandler`.
struct ConnectionPipeline: Sendable {
    let sslContext: NIOSSLContext
    let behavior: any SimulatorBehavior
    let log: SimulatorRequestLog
    let maxConcurrentStreams: Int
    let counter = ConnectionCounter()

    /// SETTINGS sent to every client, and the connection-level flow-control target.
    var connectionConfiguration: NIOHTTP2Handler.ConnectionConfiguration {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384),  // NIO's default decoder limit
        ]
        // Many concurrent small bodies: a connection window as large as 16 stream windows.
        configuration.targetWindowSize = 16 * 65_535
        // NIO's anti-abuse limits (200 RST_STREAM frames or stream errors per 30 s, 200 glitches
        // per connection) hang up on a bulk sender: curl 7.88/nghttp2 resets streams it has
        // finished with, and NIO answered GOAWAY ENHANCE_YOUR_CALM (ExcessiveRSTFrames) after ~300
        // requests of a `curl --parallel` run. The simulator serves trusted local clients, so the
        // limits are raised out of the way; fault injection, not NIO, should decide GOAWAYs.
        configuration.maximumConnectionGlitches = 1_000_000
        return configuration
    }

    /// Per-stream settings; see `connectionConfiguration` for why the rate limits are raised.
    var streamConfiguration: NIOHTTP2Handler.StreamConfiguration {
        var configuration = NIOHTTP2Handler.StreamConfiguration()
        configuration.streamResetFrameRateLimit.maximumCount = 1_000_000
        configuration.streamErrorRateLimit.maximumCount = 1_000_000
        return configuration
    }

    func configure(_ channel: any Channel) -> EventLoopFuture<Void> {
        let connection = SimulatorConnection(id: counter.next())
        let behavior = self.behavior
        let log = self.log
        let connectionConfiguration = self.connectionConfiguration
        let streamConfiguration = self.streamConfiguration

        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
        }.flatMap {
            channel.configureHTTP2SecureUpgrade(
                h2ChannelConfigurator: { channel in
                    channel.configureHTTP2Pipeline(
                        mode: .server,
                        connectionConfiguration: connectionConfiguration,
                        streamConfiguration: streamConfiguration
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(
                                APNsStreamHandler(behavior: behavior, connection: connection, log: log))
                        }
                    }.map { _ in }
                },
                // APNs speaks only HTTP/2: a client that did not negotiate h2 is hung up on.
                http1ChannelConfigurator: { channel in channel.close() }
            )
        }
    }
}
