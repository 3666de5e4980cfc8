import Foundation
import HeraldCore

/// One HTTP/2 request as the simulator received it, independent of NIO types so that the
/// behaviour can be unit-tested without a connection.
public struct SimulatorRequest: Sendable {
    public var method: String
    public var path: String
    /// `:authority` (the host and port the client addressed), if sent.
    public var authority: String?
    /// Regular (non-pseudo) header fields in arrival order; names lowercase as HTTP/2 requires.
    public var headers: [(name: String, value: String)]
    /// The body, possibly cut at `SimulatorRequest.bodyKeepLimit` bytes.
    public var body: [UInt8]
    /// The full body length as received, which may exceed `body.count`.
    public var bodyLength: Int

    /// Bodies are kept up to this size; anything longer is over every APNs limit anyway.
    public static let bodyKeepLimit = 64 * 1024

    public init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8], bodyLength: Int? = nil) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.bodyLength = bodyLength ?? body.count
    }

    /// The first value of `name` (lowercase), or nil.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    /// How many times `name` (lowercase) occurs.
    public func count(of name: String) -> Int {
        headers.reduce(0) { $0 + ($1.name == name ? 1 : 0) }
    }

    /// Whether this is a broadcast or channel-management request: those carry and get back
    /// `apns-request-id` instead of `apns-id`.
    public var usesRequestId: Bool { !path.hasPrefix("/3/") }

    /// The device token text of a `/3/device/<token>` path (possibly empty), else nil.
    public var pathToken: String? {
        let prefix = "/3/device/"
        guard path.hasPrefix(prefix) else { return nil }
        return String(path.dropFirst(prefix.count))
    }
}

/// The behaviour's answer to one request, plus what it learnt for the request log.
public struct SimulatorVerdict: Sendable, Equatable {
    public var status: Int
    /// Nil for 200.
    public var reason: APNsReason?
    /// Milliseconds since the epoch; Apple sends it only with 410.
    public var timestamp: Int?
    /// The device token text from `:path`, if the path had one.
    public var token: String?
    /// kid/iss/iat of the provider token, if one could be decoded.
    public var providerToken: ProviderTokenClaims?
    /// The request proved who sent it (a valid, fresh provider token, or a certificate
    /// connection). The first such request raises the connection's MAX_CONCURRENT_STREAMS.
    public var authenticated: Bool
    /// The injected fault that decided this answer (`p429`, `p500`, `p503`, `flaky`), for the log.
    public var fault: String?
    /// Response headers beyond the id headers (`apns-channel-id` for a created channel).
    public var extraHeaders: [String: String] = [:]
    /// A success body (channel management answers JSON); errors use `reason`.
    public var payload: [UInt8]? = nil
    /// The topic the request was checked against, for the log: its `apns-topic`, or the app a
    /// certificate connection defaults it to, or a broadcast's or channel request's bundle id.
    public var topic: String? = nil

    public init(status: Int, reason: APNsReason?, timestamp: Int? = nil, token: String? = nil,
                providerToken: ProviderTokenClaims? = nil, authenticated: Bool = false, fault: String? = nil) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.token = token
        self.providerToken = providerToken
        self.authenticated = authenticated
        self.fault = fault
    }

    /// 200 OK.
    public static func accepted(token: String?, providerToken: ProviderTokenClaims?, authenticated: Bool = true) -> SimulatorVerdict {
        SimulatorVerdict(status: 200, reason: nil, token: token, providerToken: providerToken, authenticated: authenticated)
    }

    /// A rejection whose status is read from `APNsReasonTable` (the one table the sender and
    /// reports read too). Reasons missing from the table are answered 400.
    public static func rejected(_ reason: APNsReason, timestamp: Int? = nil, token: String?, providerToken: ProviderTokenClaims?,
                                authenticated: Bool = false) -> SimulatorVerdict {
        SimulatorVerdict(status: APNsReasonTable.entry(for: reason)?.status ?? 400, reason: reason,
                         timestamp: timestamp, token: token, providerToken: providerToken, authenticated: authenticated)
    }

    /// The same request answered otherwise (a token rule or a fault replacing a 200).
    func replaced(by reason: APNsReason, timestamp: Int? = nil, fault: String? = nil) -> SimulatorVerdict {
        var v = SimulatorVerdict.rejected(reason, timestamp: timestamp, token: token, providerToken: providerToken, authenticated: authenticated)
        v.fault = fault
        v.topic = topic
        return v
    }

    /// The JSON error body: `{"reason":"…"}`, plus `"timestamp"` when set; nil for a reasonless answer.
    public var body: [UInt8]? {
        guard let reason else { return payload }
        var out = Array("{\"reason\":".utf8)
        JSONEscaping.appendQuoted(reason.rawValue, to: &out)
        if let timestamp { out.append(contentsOf: ",\"timestamp\":\(timestamp)".utf8) }
        out.append(UInt8(ascii: "}"))
        return out
    }
}

/// Decides the answer to each request, like pushy's pluggable server behaviour. `APNsBehavior`
/// is the standard one (Apple's validation, token rules, seeded faults); tests may plug in others.
public protocol SimulatorBehavior: Sendable {
    /// Called once per complete request (headers and body), on the connection's event loop.
    /// `now` is passed in so the decision is reproducible in tests.
    func respond(to request: SimulatorRequest, on connection: SimulatorConnection, now: Date) -> SimulatorVerdict
}
