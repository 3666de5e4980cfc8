import NIOCore
import NIOHTTP2
import NIOSSL

/// Builds each accepted connection's pipeline: the socket edge (for abrupt closes), TLS, ALPN
/// (h2 or close), NIO's HTTP/2 connection handler, and one `APNsConnectionHandler`.
struct ConnectionPipeline: Sendable {
    let sslContext: NIOSSLContext
    let policy: ConnectionPolicy
    let counter = ConnectionCounter()

    func configure(_ channel: any Channel) -> EventLoopFuture<Void> {
        let policy = self.policy
        let counter = self.counter
        let connectionConfiguration = policy.connectionConfiguration
        let streamConfiguration = policy.streamConfiguration
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(SocketEdgeHandler())
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
        }.flatMap {
            channel.configureHTTP2SecureUpgrade(
                h2ChannelConfigurator: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        // Numbered here, after TLS and ALPN: failed handshakes are not connections.
                        let connection = SimulatorConnection(id: counter.next())
                        try channel.pipeline.syncOperations.addHandler(
                            NIOHTTP2Handler(mode: .server, connectionConfiguration: connectionConfiguration,
                                            streamConfiguration: streamConfiguration))
                        try channel.pipeline.syncOperations.addHandler(APNsConnectionHandler(policy: policy, connection: connection))
                    }
                },
                // APNs speaks only HTTP/2: a client that did not negotiate h2 is hung up on.
                http1ChannelConfigurator: { channel in channel.close() }
            )
        }
    }
}
