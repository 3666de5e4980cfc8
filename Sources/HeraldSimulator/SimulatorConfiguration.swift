import HeraldCore

/// Where the simulator's TLS server certificate comes from.
public enum SimulatorTLS: Sendable, Equatable {
    /// A throwaway CA and a `localhost`/`127.0.0.1`/`::1` leaf made at start time; clients trust
    /// `APNsSimulator.caCertificatePEM`.
    case generated
    /// An operator's own certificate (PEM, leaf first, chain may follow) and its private key (PEM).
    case files(certificatePEMPath: String, privateKeyPEMPath: String)
}

/// How an `APNsSimulator` listens and what it accepts.
///
/// The defaults describe a strict but healthy APNs on an ephemeral loopback port: every request
/// that follows Apple's rules is answered 200, every rule broken gets Apple's status and reason.
public struct SimulatorConfiguration: Sendable {
    /// Address to bind. Default `127.0.0.1`: the simulator is a test tool, not a service.
    public var host: String
    /// Port to bind; 0 (the default) asks the kernel for a free one, read it back from `APNsSimulator.port`.
    public var port: Int
    /// The Team ID a provider token's `iss` claim must carry.
    public var teamId: String
    /// The Key ID a provider token's header `kid` must carry.
    public var keyId: String
    /// ES256 public key (SPKI PEM, "BEGIN PUBLIC KEY") that verifies provider-token signatures.
    public var publicKeyPEM: String
    /// When set, `apns-topic` must equal this plus the push type's suffix (`PushType.topicSuffix`),
    /// else 400 `BadTopic`. Nil accepts any non-empty topic.
    public var bundleId: String?
    /// Device tokens (lowercase hex) starting with one of these are answered 410 `Unregistered`.
    public var unregisteredPrefixes: [String]
    /// Device tokens (lowercase hex) starting with one of these are answered 400 `BadDeviceToken`,
    /// as APNs does for a token of the other environment.
    public var badTokenPrefixes: [String]
    /// Server certificate source.
    public var tls: SimulatorTLS
    /// Optional NDJSON request log: one line per request, written as it is answered.
    /// Device tokens and payloads are written in full (it is a test record); provider tokens never are.
    public var logPath: String?
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced to clients. APNs announces its own figure and
    /// clients must not assume one; 1000 lets herald's stream limit, not the simulator, be the bottleneck.
    public var maxConcurrentStreams: Int
    /// Event-loop threads serving connections; 0 means one per core.
    public var threads: Int

    public init(teamId: String, keyId: String, publicKeyPEM: String) {
        self.host = "127.0.0.1"
        self.port = 0
        self.teamId = teamId
        self.keyId = keyId
        self.publicKeyPEM = publicKeyPEM
        self.bundleId = nil
        self.unregisteredPrefixes = []
        self.badTokenPrefixes = []
        self.tls = .generated
        self.logPath = nil
        self.maxConcurrentStreams = 1000
        self.threads = 0
    }
}
