import HeraldCore

/// One notification ready to leave: everything the request needs, nothing it doesn't.
public struct PushRequest: Sendable {
    /// Every request's path is this and the device token's hex.
    static let devicePathPrefix = "/3/device/"

    public var token: DeviceToken
    public var payload: [UInt8]
    /// Deterministic per recipient, reused on every attempt, so a resend is recognisably the same notification.
    public var apnsId: String
    public var topic: String
    public var pushType: PushType
    public var priority: Int
    public var collapseId: String?
    /// UNIX seconds for `apns-expiration`, or nil to leave the header out.
    public var expiration: Int?

    public init(token: DeviceToken, payload: [UInt8], apnsId: String, topic: String, pushType: PushType,
                priority: Int, collapseId: String? = nil, expiration: Int? = nil) {
        self.token = token; self.payload = payload; self.apnsId = apnsId; self.topic = topic
        self.pushType = pushType; self.priority = priority; self.collapseId = collapseId; self.expiration = expiration
    }
}

/// What came back for one request.
public enum PushOutcome: Sendable, Equatable {
    /// APNs answered. `timestamp` is the 410 body's milliseconds since the epoch.
    case answered(status: Int, apnsId: String?, reason: APNsReason?, timestamp: Int64?)
    /// No answer: connect failure, TLS failure, reset, timeout. Outcome unknown; resend with the same apns-id.
    case transportFailure(String)
}

extension PushOutcome {
    /// The libcurl error code of a transport failure ("curl error 60: …"), nil for answers.
    public var curlCode: Int? {
        guard case .transportFailure(let why) = self, why.hasPrefix("curl error ") else { return nil }
        return Int(why.dropFirst("curl error ".count).prefix { $0.isNumber })
    }

    /// The server's certificate was not trusted (or ours not accepted): a configuration problem
    /// (`apns.ca_file`, the system trust store, the client certificate), not a network hiccup.
    /// curl 58 local certificate, 60 peer verification, 77 CA file, 83 issuer check; the nghttp2
    /// engine's own ("TLS trust: …", CHTTP2Client).
    public var isTrustFailure: Bool {
        if case .transportFailure(let why) = self, why.hasPrefix("TLS trust: ") { return true }
        return [58, 60, 77, 83].contains(curlCode ?? 0)
    }
}

public struct PushResult: Sendable {
    /// Index of the request in the batch it was sent in (`PushJob.index` when streaming).
    public var index: Int
    public var outcome: PushOutcome
    public var latencyMs: Int
    /// The HTTP version libcurl negotiated (20 for HTTP/2), for tests and diagnostics.
    public var httpVersion: Int
    /// The answer's `apns-unique-id` header (APNs sends it in development only).
    public var apnsUniqueId: String? = nil
    /// Which of the sender's connections carried it.
    public var connection: Int = 0
    /// For a transport failure: which loss of that connection (the streams one reset fails share
    /// it), so the circuit breaker counts a connection loss once. 0 for answers.
    public var event: Int = 0

    public init(index: Int, outcome: PushOutcome, latencyMs: Int = 0, httpVersion: Int = 20, connection: Int = 0, event: Int = 0) {
        self.index = index; self.outcome = outcome; self.latencyMs = latencyMs; self.httpVersion = httpVersion
        self.connection = connection; self.event = event
    }
}
