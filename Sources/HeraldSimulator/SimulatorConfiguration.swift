import HeraldCore

/// Where the simulator's TLS server certificate comes from.
public enum SimulatorTLS: Sendable, Equatable {
    /// A throwaway CA and a `localhost`/`127.0.0.1`/`::1` leaf made at start time; clients trust
    /// `APNsSimulator.caCertificatePEM`.
    case generated
    /// An operator's own certificate (PEM, leaf first, chain may follow) and its private key (PEM).
    case files(certificatePEMPath: String, privateKeyPEMPath: String)
}

/// How clients prove who they are, as APNs offers it: a provider token (JWT) on every request, or
/// a TLS client certificate on the connection, in which case `authorization` is ignored (Apple).
public enum SimulatorAuthentication: Sendable, Equatable {
    /// ES256 provider tokens whose header `kid` is `keyId`, whose `iss` is `teamId`, signed by the
    /// private half of `publicKeyPEM` (SPKI PEM, "BEGIN PUBLIC KEY").
    case providerToken(teamId: String, keyId: String, publicKeyPEM: String)
    /// Every connection must present a client certificate that chains to a CA in this PEM file;
    /// the TLS handshake fails otherwise, as it does at Apple for a revoked or foreign certificate.
    case clientCertificate(caPEMPath: String)
    /// Several credentials on one port, as Apple serves every team and app on the same host: each
    /// provider-token key verifies its own team's tokens for its own apps, and with
    /// `clientCertificates` a connection may instead present a certificate from that CA. With token
    /// keys the certificate is optional (token clients and certificate clients share the port);
    /// without any, it is required as in `clientCertificate`.
    case credentials(tokenKeys: [SimulatorTokenKey], clientCertificates: SimulatorClientCertificates?)

    /// The provider-token keys of every case (one for `providerToken`, none for `clientCertificate`).
    public var tokenKeys: [SimulatorTokenKey] {
        switch self {
        case .providerToken(let teamId, let keyId, let publicKeyPEM):
            return [SimulatorTokenKey(teamId: teamId, keyId: keyId, publicKeyPEM: publicKeyPEM)]
        case .clientCertificate: return []
        case .credentials(let keys, _): return keys
        }
    }

    /// The client-certificate CA of every case, if any.
    public var clientCertificates: SimulatorClientCertificates? {
        switch self {
        case .providerToken: return nil
        case .clientCertificate(let path): return SimulatorClientCertificates(caPEMPath: path)
        case .credentials(_, let certificates): return certificates
        }
    }
}

/// One developer team's provider-token key (what a .p8 file is) and the apps it may send to.
///
/// Apple: a team-scoped key's tokens serve "any topic in a team", a topic-specific key's only its
/// topics (https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns);
/// a topic outside them is 400 `TopicDisallowed`.
public struct SimulatorTokenKey: Sendable, Equatable {
    /// The tokens' `iss`.
    public var teamId: String
    /// The tokens' header `kid`; unique among the configured keys.
    public var keyId: String
    /// SPKI PEM ("BEGIN PUBLIC KEY") of the key that signs them.
    public var publicKeyPEM: String
    /// The bundle ids its tokens may send to, each with any of Apple's push-type suffixes
    /// (`PushType.topicSuffix`); empty: any topic.
    public var bundleIds: [String]

    public init(teamId: String, keyId: String, publicKeyPEM: String, bundleIds: [String] = []) {
        self.teamId = teamId
        self.keyId = keyId
        self.publicKeyPEM = publicKeyPEM
        self.bundleIds = bundleIds
    }
}

/// Certificate authentication: the CA client certificates must chain to, and the apps they may
/// send to. Apple issues a certificate per app, and "a certificate-based connection" is for that
/// app (https://developer.apple.com/documentation/usernotifications/establishing-a-certificate-based-connection-to-apns):
/// another app's topic on it is 400 `TopicDisallowed`.
public struct SimulatorClientCertificates: Sendable, Equatable {
    /// PEM file of the CA(s).
    public var caPEMPath: String
    /// The bundle ids its certificates may send to (with any push-type suffix); empty: any topic.
    /// With exactly one, a request without `apns-topic` is for it, as Apple defaults the topic
    /// to the certificate's app.
    public var bundleIds: [String]

    public init(caPEMPath: String, bundleIds: [String] = []) {
        self.caPEMPath = caPEMPath
        self.bundleIds = bundleIds
    }
}

/// How an `APNsSimulator` listens, what it accepts and which faults it injects.
///
/// The defaults describe a strict but healthy APNs on an ephemeral loopback port: every request
/// that follows Apple's rules is answered 200, every rule broken gets Apple's status and reason,
/// and no fault is injected.
public struct SimulatorConfiguration: Sendable {
    /// Address to bind. Default `127.0.0.1`: the simulator is a test tool, not a service.
    public var host: String
    /// Port to bind; 0 (the default) asks the kernel for a free one, read it back from `APNsSimulator.port`.
    public var port: Int
    public var authentication: SimulatorAuthentication
    /// When set, `apns-topic` must be this bundle id plus the push type's suffix
    /// (`PushType.topicSuffix`): another app's topic is 400 `TopicDisallowed`, this app's topic
    /// with the wrong suffix 400 `BadTopic`. Nil accepts any non-empty topic.
    public var bundleId: String?
    /// Server certificate source.
    public var tls: SimulatorTLS
    /// Optional NDJSON request log: one line per request, written as it is answered.
    /// Device tokens and payloads are written in full (it is a test record); provider tokens never are.
    public var logPath: String?
    /// Keep every request's log entry in memory for `SimulatorRequestLog.entries()`. Tests want
    /// them; `herald run` and `herald sim` turn this off so memory does not grow with traffic
    /// (the counters are kept either way).
    public var keepsEntriesInMemory: Bool
    /// SETTINGS_MAX_CONCURRENT_STREAMS once a connection is authenticated. Like Apple, a
    /// provider-token connection starts at 1 and is raised to this after its first request with a
    /// valid token ("APNs allows only one stream until you post a request with a valid
    /// authentication token", https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns); a certificate connection gets it at once. 1000 keeps herald's own
    /// stream limit, not the simulator, the bottleneck.
    public var maxConcurrentStreams: Int
    /// Apple: a provider token whose `iat` is more than an hour old gets 403 `ExpiredProviderToken`.
    public var jwtMaxAgeSeconds: Int
    /// Apple: "APNs report an error if you use a new token more than once every 20 minutes on the
    /// same connection" (429 `TooManyProviderTokenUpdates`; https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns).
    public var tokenUpdateIntervalSeconds: Int
    /// Deterministic answers for chosen device tokens.
    public var tokenRules: SimulatorTokenRules
    /// Seeded random faults, latency and connection faults.
    public var faults: SimulatorFaults
    /// Event-loop threads serving connections; 0 means one per core.
    public var threads: Int
    /// When set, the channel management API (`ChannelManagementBehavior`) listens on this port
    /// too (0: a free one, `APNsSimulator.managementPort`), sharing its channels with the
    /// broadcast endpoint of the push port. Apple's are 2195 (sandbox) and 2196 (production).
    public var managementPort: Int? = nil
    /// Channels per app before the management API answers `CannotCreateChannelConfig`.
    public var channelLimit = 10_000
    /// A broadcast to a well-formed channel id nobody created registers it (Most Recent Message
    /// Stored) instead of answering `ChannelNotRegistered`: the in-process simulator of an
    /// `endpoint: simulator` job, where channels cannot be created first.
    public var adoptsUnknownChannels = false

    /// A provider-token simulator (what herald uses).
    public init(teamId: String, keyId: String, publicKeyPEM: String) {
        self.init(authentication: .providerToken(teamId: teamId, keyId: keyId, publicKeyPEM: publicKeyPEM))
    }

    /// A simulator for several apps at once: `tokenKeys` (one per team key) and, optionally,
    /// certificate clients, all on one port.
    public init(tokenKeys: [SimulatorTokenKey], clientCertificates: SimulatorClientCertificates? = nil) {
        self.init(authentication: .credentials(tokenKeys: tokenKeys, clientCertificates: clientCertificates))
    }

    public init(authentication: SimulatorAuthentication) {
        self.host = "127.0.0.1"
        self.port = 0
        self.authentication = authentication
        self.bundleId = nil
        self.tls = .generated
        self.logPath = nil
        self.keepsEntriesInMemory = true
        self.maxConcurrentStreams = 1000
        self.jwtMaxAgeSeconds = 3600
        self.tokenUpdateIntervalSeconds = 1200
        self.tokenRules = SimulatorTokenRules()
        self.faults = SimulatorFaults()
        self.threads = 0
    }

    /// Device tokens (lowercase hex) starting with one of these are answered 410 `Unregistered`.
    public var unregisteredPrefixes: [String] {
        get { tokenRules.unregisteredPrefixes }
        set { tokenRules.unregisteredPrefixes = newValue }
    }

    /// Device tokens (lowercase hex) starting with one of these are answered 400 `BadDeviceToken`,
    /// as APNs does for a token of the other environment.
    public var badTokenPrefixes: [String] {
        get { tokenRules.badTokenPrefixes }
        set { tokenRules.badTokenPrefixes = newValue }
    }

    /// Checks every value an operator can get wrong, so `start` fails with one line instead of a
    /// simulator that misbehaves. The CLI and the job loader check the same ranges earlier, naming
    /// their flag or key; this is the library's own guard.
    public func validate() throws(SimulatorError) {
        func bad(_ what: String) -> SimulatorError { .badConfiguration(what) }
        guard (0...65_535).contains(port) else { throw bad("port must be 0-65535, not \(port)") }
        guard (1...Int(Int32.max)).contains(maxConcurrentStreams) else {
            throw bad("max concurrent streams must be at least 1, not \(maxConcurrentStreams)")
        }
        guard jwtMaxAgeSeconds >= 0 else { throw bad("JWT max age must be 0 or more seconds, not \(jwtMaxAgeSeconds)") }
        guard tokenUpdateIntervalSeconds >= 0 else {
            throw bad("token update interval must be 0 or more seconds, not \(tokenUpdateIntervalSeconds)")
        }
        guard threads >= 0 else { throw bad("threads must be 0 (one per core) or more, not \(threads)") }
        let keys = authentication.tokenKeys
        if keys.contains(where: { $0.teamId.isEmpty || $0.keyId.isEmpty }) {
            throw bad("provider-token mode needs a team id and a key id")
        }
        if keys.isEmpty && authentication.clientCertificates == nil {
            throw bad("give at least one provider-token key or a client-certificate CA")
        }
        var seen = Set<String>()
        for key in keys where !seen.insert(key.keyId).inserted {
            throw bad("key id \(key.keyId) is given twice: a token's kid must name one key")
        }
        let bundles = keys.flatMap(\.bundleIds) + (authentication.clientCertificates?.bundleIds ?? [])
        if bundles.contains(where: { $0.isEmpty || $0.contains(where: \.isWhitespace) }) {
            throw bad("a bundle id must be non-empty and without spaces")
        }
        try tokenRules.validate()
        try faults.validate()
    }
}
