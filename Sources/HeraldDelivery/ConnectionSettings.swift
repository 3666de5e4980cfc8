import Foundation

/// Settings for the sender's connections to APNs.
public struct ConnectionSettings: Sendable {
    /// `https://host[:port]`, no trailing slash.
    public var baseURL: String
    public var trust: TLSTrust
    /// A client certificate (certificate authentication); nil for provider tokens.
    public var identity: ClientIdentity?
    /// `apns.proxy`; nil leaves the choice to the environment (`ProxyTunnel.resolve`).
    public var proxy: ProxySettings?
    /// Requests in flight on one connection (HTTP/2 streams).
    public var maxStreams: Int
    public var connectTimeoutMs: Int
    /// One request, from leaving the queue to its answer: an answer that never comes (a server
    /// that swallowed the stream) ends as a transport failure, resent with the same apns-id.
    public var requestTimeoutMs: Int
    /// A connection with nothing in flight for this long is closed (and reopened when work comes).
    public var idleTimeoutMs: Int
    /// TCP keepalive probes after this many idle seconds (then every half of it): a connection a
    /// middlebox silently dropped is noticed by the kernel, not by a request timing out.
    public var keepAliveSeconds: Int
    /// A connection whose server has sent nothing for this long gets an HTTP/2 PING
    /// (`apns.ping_interval`). Why and how it fits `idleTimeoutMs`: docs/delivery.md,
    /// "Keepalive and idle close".
    public var pingIntervalMs = 60_000
    /// No ACK to that PING within this long: the connection is given up, its open streams come
    /// back as lost (resent with their apns-id) and the next work opens a new one (`apns.ping_timeout`).
    public var pingTimeoutMs = 15_000

    public init(baseURL: String, trust: TLSTrust, identity: ClientIdentity? = nil, maxStreams: Int = 100,
                connectTimeoutMs: Int = 10_000, requestTimeoutMs: Int = 30_000,
                idleTimeoutMs: Int = 600_000, keepAliveSeconds: Int = 60) {
        self.baseURL = baseURL; self.trust = trust; self.identity = identity; self.maxStreams = maxStreams
        self.connectTimeoutMs = connectTimeoutMs; self.requestTimeoutMs = requestTimeoutMs
        self.idleTimeoutMs = idleTimeoutMs; self.keepAliveSeconds = keepAliveSeconds
    }

    /// `host[:port]` of `https://host[:port]`, the port left out when it is 443: every request's
    /// `:authority` (RFC 9113 §8.3.1).
    var authority: String {
        var rest = Substring(baseURL)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        if rest.hasSuffix(":443") { rest = rest.dropLast(4) }
        return String(rest)
    }
}
