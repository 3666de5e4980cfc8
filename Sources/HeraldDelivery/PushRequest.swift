import HeraldCore

/// One notification ready to leave: everything the request needs, nothing it doesn't. A
/// broadcast's request carries its channel id in `token` (`DeviceToken(broadcastChannel:)`) and
/// its `apns-request-id` in `apnsId` (`PushDestination.broadcasts`).
public struct PushRequest: Sendable {
    /// A device push's path is this and the device token's hex.
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
    /// No answer: the request never left, or its connection failed before the answer came.
    /// `AnswerMeaning` decides from its kind what happens next.
    case transportFailure(TransportFailure)
}

/// Why a request has no answer, as the connection saw it (CHTTP2Client's `h2_error_kind` and
/// answer flags), and the text an operator reads in the log and the reports.
public struct TransportFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, CaseIterable {
        /// The APNs (or proxy) host name did not resolve.
        case nameNotResolved
        /// TCP connect refused, unreachable or timed out.
        case connectFailed
        /// The server's certificate did not verify (`apns.ca_file`, the system's trust store): a
        /// configuration problem, not a network hiccup.
        case tlsTrust
        /// The server refused us with a TLS alert: a client certificate it does not accept.
        case tlsRefused
        /// The TLS handshake failed otherwise (or the TLS context could not be built).
        case tlsHandshake
        /// The server did not agree to HTTP/2 or broke the protocol.
        case protocolError
        /// The proxy refused the tunnel, or broke its protocol.
        case proxyRefused
        /// The proxy wants credentials, or refused the ones given (HTTP 407, a SOCKS5 refusal).
        case proxyCredentials
        /// The connection died with the request on it: APNs may have processed it.
        case connectionLost
        /// No answer within `apns.request_timeout`; the stream was reset.
        case timedOut
        /// The request never left herald (its connection was going away, memory ran out before it
        /// was written, the provider token could not be signed, APNs refused the stream unprocessed).
        case neverSent
    }

    public var kind: Kind
    /// For people: what failed, never a credential.
    public var detail: String

    public init(_ kind: Kind, _ detail: String) { self.kind = kind; self.detail = detail }

    public var description: String { detail }
}

public struct PushResult: Sendable {
    /// Index of the request in the batch it was sent in (`PushJob.index` when streaming).
    public var index: Int
    public var outcome: PushOutcome
    public var latencyMs: Int
    /// The HTTP version the answer came over (20 for HTTP/2; 0 when none came), for tests and diagnostics.
    public var httpVersion: Int
    /// The answer's `apns-unique-id` header (APNs sends it in development only).
    public var apnsUniqueId: String? = nil
    /// The pool that carried it (`PushJob.pool`; 0 for a single `APNsSender`).
    public var pool: Int = 0
    /// Which of the pool's connections carried it (numbered per pool: key by `pool` and `connection`).
    public var connection: Int = 0
    /// For a transport failure: which loss of that connection (the streams one reset fails share
    /// it), so the circuit breaker counts a connection loss once. 0 for answers.
    public var event: Int = 0

    public init(index: Int, outcome: PushOutcome, latencyMs: Int = 0, httpVersion: Int = 20, connection: Int = 0, event: Int = 0,
                pool: Int = 0) {
        self.index = index; self.outcome = outcome; self.latencyMs = latencyMs; self.httpVersion = httpVersion
        self.connection = connection; self.event = event; self.pool = pool
    }
}
