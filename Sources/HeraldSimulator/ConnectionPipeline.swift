import NIOCore
import NIOHTTP2
import NIOSSL
import X509

/// Builds each accepted connection's pipeline: the socket edge (for abrupt closes), TLS, ALPN
/// (h2 or close), NIO's HTTP/2 connection handler, and one `APNsConnectionHandler`.
struct ConnectionPipeline: Sendable {
    let sslContext: NIOSSLContext
    let policy: ConnectionPolicy
    let counter = ConnectionCounter()

    func configure(_ channel: any Channel) -> EventLoopFuture<Void> {
        let policy = self.policy
        let counter = self.counter
        let streamConfiguration = policy.streamConfiguration
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(SocketEdgeHandler())
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
        }.flatMap {
            channel.configureHTTP2SecureUpgrade(
                h2ChannelConfigurator: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        // Numbered here, after TLS and ALPN: failed handshakes are not connections.
                        // The handshake is done, so the client certificate (verified, if any) is known.
                        let presented = try channel.pipeline.syncOperations.nioSSL_peerCertificate()
                        let connection = SimulatorConnection(id: counter.next(), clientCertificate: presented.map(Self.describe))
                        let settings = policy.connectionConfiguration(startsWithOneStream: policy.startsWithOneStream(connection))
                        try channel.pipeline.syncOperations.addHandler(
                            NIOHTTP2Handler(mode: .server, connectionConfiguration: settings, streamConfiguration: streamConfiguration))
                        try channel.pipeline.syncOperations.addHandler(APNsConnectionHandler(policy: policy, connection: connection))
                    }
                },
                // APNs speaks only HTTP/2: a client that did not negotiate h2 is hung up on.
                http1ChannelConfigurator: { channel in channel.close() }
            )
        }
    }

    /// The subject common name of a client certificate, for the request log.
    static func describe(_ certificate: NIOSSLCertificate) -> SimulatorClientCertificate {
        guard let der = try? certificate.toDERBytes(), let parsed = try? Certificate(derEncoded: der) else {
            return SimulatorClientCertificate(commonName: nil)
        }
        let names = parsed.subject.flatMap { $0 }.filter { $0.type == .RDNAttributeType.commonName }
        return SimulatorClientCertificate(commonName: names.last.flatMap { String($0.value) })
    }
}
