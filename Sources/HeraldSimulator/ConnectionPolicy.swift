import NIOCore
import NIOHTTP2

/// What every connection's handler needs, shared by all connections.
struct ConnectionPolicy: Sendable {
    let behavior: any SimulatorBehavior
    let log: SimulatorRequestLog
    let faults: SimulatorFaults
    let maxConcurrentStreams: Int
    /// Provider-token keys are configured: a connection without a client certificate starts with
    /// one stream until its first authenticated request (Apple).
    let acceptsProviderTokens: Bool
    /// Connection-level receive window, raised from HTTP/2's 65,535 on the first request so many
    /// concurrent small bodies never wait for a WINDOW_UPDATE.
    static let connectionWindow = 1 << 20
    /// A stream's unacknowledged body bytes before its WINDOW_UPDATE (bodies over the initial
    /// 65,535-byte window, which APNs payloads never reach, would otherwise stall).
    static let streamUpdateThreshold = 16_384

    /// Whether `connection` starts with one stream: a provider-token connection does.
    func startsWithOneStream(_ connection: SimulatorConnection) -> Bool {
        acceptsProviderTokens && connection.clientCertificate == nil
    }

    /// SETTINGS sent to a client.
    func connectionConfiguration(startsWithOneStream: Bool) -> NIOHTTP2Handler.ConnectionConfiguration {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: startsWithOneStream ? 1 : maxConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384),  // NIO's default decoder limit
        ]
        // NIO's anti-abuse limits (200 RST_STREAM frames or stream errors per 30 s, 200 glitches
        // per connection) hang up on a bulk sender: curl 7.88/nghttp2 resets every stream it has
        // finished with, and NIO answers a few hundred of those with GOAWAY ENHANCE_YOUR_CALM
        // (ExcessiveRSTFrames). herald's own connection sends no such resets; other clients such
        // as `curl --parallel` do. The simulator serves trusted local
        // clients, so the limits are raised out of the way; fault injection, not NIO, decides GOAWAYs.
        configuration.maximumConnectionGlitches = 1_000_000
        return configuration
    }

    /// Rate limits; see `connectionConfiguration` for why they are raised.
    var streamConfiguration: NIOHTTP2Handler.StreamConfiguration {
        var configuration = NIOHTTP2Handler.StreamConfiguration()
        configuration.streamResetFrameRateLimit.maximumCount = 1_000_000
        configuration.streamErrorRateLimit.maximumCount = 1_000_000
        return configuration
    }

    /// The wait before answering one request: latency plus a seeded jitter.
    func latency(connection: Int, stream: Int) -> Int {
        guard faults.latencyJitterMs > 0 else { return faults.latencyMs }
        let roll = FaultDice.unit(seed: faults.seed, key: "", index: UInt64(connection) << 32 | UInt64(stream))
        return faults.latencyMs + Int(roll * Double(faults.latencyJitterMs + 1))
    }
}
