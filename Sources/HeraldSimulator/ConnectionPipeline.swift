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
        return configuration
    }

    func configure(_ channel: any Channel) -> EventLoopFuture<Void> {
        let connection = SimulatorConnection(id: counter.next())
        let behavior = self.behavior
        let log = self.log
        let connectionConfiguration = self.connectionConfiguration
        let streamConfiguration = NIOHTTP2Handler.StreamConfiguration()

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
