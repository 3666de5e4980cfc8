import Foundation
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import HeraldCore

/// An APNs stand-in that speaks real HTTP/2 over TLS (ALPN `h2` only, TLS 1.2+), for tests and
/// `herald sim`. Library first, like pushy's MockApnsServer: the command is a thin wrapper.
///
/// Lifecycle is synchronous because its callers are a synchronous CLI and tests:
/// `start` returns once the socket listens; `shutdown` returns once every connection is closed.
public final class APNsSimulator: Sendable {
    /// The bound port (the kernel's pick when the configuration asked for 0).
    public let port: Int
    /// PEM that clients must trust: the generated CA, or the configured certificate file.
    public let caCertificatePEM: String
    /// Every request received so far, and the counters.
    public let requestLog: SimulatorRequestLog

    /// The channel management port (`SimulatorConfiguration.managementPort`), if it listens.
    public let managementPort: Int?
    /// The broadcast channels both ports share.
    public let channels: ChannelRegistry

    private let group: MultiThreadedEventLoopGroup
    private let listeners: [any Channel]
    private let stopped = Locked(false)

    private init(port: Int, managementPort: Int?, channels: ChannelRegistry, caCertificatePEM: String, requestLog: SimulatorRequestLog,
                 group: MultiThreadedEventLoopGroup, listeners: [any Channel]) {
        self.port = port
        self.managementPort = managementPort
        self.channels = channels
        self.caCertificatePEM = caCertificatePEM
        self.requestLog = requestLog
        self.group = group
        self.listeners = listeners
    }

    /// Starts the standard simulator (`APNsBehavior`) described by `configuration`, with the
    /// channel management port when it asks for one.
    public static func start(_ configuration: SimulatorConfiguration) throws(SimulatorError) -> APNsSimulator {
        let channels = ChannelRegistry(limit: configuration.channelLimit, seed: configuration.faults.seed)
        return try start(configuration, behavior: APNsBehavior(configuration: configuration, channels: channels), channels: channels)
    }

    /// Starts a simulator whose answers come from `behavior` (TLS, log, binding and connection
    /// faults still from `configuration`).
    public static func start(_ configuration: SimulatorConfiguration, behavior: any SimulatorBehavior,
                             channels: ChannelRegistry = ChannelRegistry()) throws(SimulatorError) -> APNsSimulator {
        try configuration.validate()
        let material = try SimulatorTLSMaterial.load(configuration.tls, host: configuration.host)
        let acceptsProviderTokens = !configuration.authentication.tokenKeys.isEmpty
        let clientCA = try configuration.authentication.clientCertificates.map { certificates throws(SimulatorError) in
            try SimulatorTLSMaterial.readClientCA(certificates.caPEMPath)
        }
        let tls = material.serverConfiguration(clientCA: clientCA, certificateOptional: acceptsProviderTokens)
        let sslContext: NIOSSLContext
        do { sslContext = try NIOSSLContext(configuration: tls) } catch {
            throw .badTLSMaterial("certificate and private key do not load into TLS (do they match?): \(error)")
        }
        let log = try SimulatorRequestLog(path: configuration.logPath, keepsEntries: configuration.keepsEntriesInMemory)

        let threads = configuration.threads > 0 ? configuration.threads : System.coreCount
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let policy = ConnectionPolicy(behavior: behavior, log: log, faults: configuration.faults,
                                      maxConcurrentStreams: configuration.maxConcurrentStreams, acceptsProviderTokens: acceptsProviderTokens)
        var pipelines = [(ConnectionPipeline(sslContext: sslContext, policy: policy), configuration.port)]
        if let managementPort = configuration.managementPort {
            // Management requests are few: no connection faults, the log shared with the push port.
            let management = try ChannelManagementBehavior(configuration: configuration, channels: channels)
            var quiet = configuration.faults
            quiet.goawayAfter = nil
            quiet.closeAfter = nil
            let managementPolicy = ConnectionPolicy(behavior: management, log: log, faults: quiet,
                                                    maxConcurrentStreams: configuration.maxConcurrentStreams, acceptsProviderTokens: acceptsProviderTokens)
            pipelines.append((ConnectionPipeline(sslContext: sslContext, policy: managementPolicy), managementPort))
        }
        var listeners: [any Channel] = []
        var ports: [Int] = []
        for (pipeline, requested) in pipelines {
            do {
                let listener = try ServerBootstrap(group: group)
                    .serverChannelOption(.backlog, value: 256)
                    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                    .childChannelInitializer { channel in pipeline.configure(channel) }
                    .bind(host: configuration.host, port: requested)
                    .wait()
                listeners.append(listener)
                guard let port = listener.localAddress?.port else { throw SimulatorError.server("listening socket has no local port") }
                ports.append(port)
            } catch {
                for l in listeners { try? l.close().wait() }
                try? group.syncShutdownGracefully()
                log.close()
                if let simulatorError = error as? SimulatorError { throw simulatorError }
                throw .cannotBind(host: configuration.host, port: requested, detail: Self.describeBindError(error))
            }
        }
        return APNsSimulator(port: ports[0], managementPort: ports.count > 1 ? ports[1] : nil, channels: channels,
                             caCertificatePEM: material.trustPEM, requestLog: log, group: group, listeners: listeners)
    }

    /// Stops listening, closes every connection and the NDJSON log, after writing the final
    /// stats line when asked (`herald sim` does; `herald run`'s log stays one line per request).
    /// Safe to call more than once.
    public func shutdown(writingStatsLine: Bool = false) throws(SimulatorError) {
        let alreadyStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        if alreadyStopped { return }
        defer {
            if writingStatsLine { requestLog.writeStatsLine() }
            requestLog.close()
        }
        do {
            for listener in listeners { try? listener.close().wait() }
            try group.syncShutdownGracefully()
        } catch {
            throw .server("shutdown failed: \(error)")
        }
    }

    /// "address in use" rather than NIO's "bind(descriptor:ptr:bytes:): Address already in use (errno: 98)".
    static func describeBindError(_ error: any Error) -> String {
        if let io = error as? IOError {
            if io.errnoCode == EADDRINUSE { return "address in use" }
            if io.errnoCode == EACCES { return "permission denied" }
            if io.errnoCode == EADDRNOTAVAIL { return "address not available on this machine" }
            return String(cString: strerror(io.errnoCode)).lowercased()
        }
        return "\(error)"
    }
}
