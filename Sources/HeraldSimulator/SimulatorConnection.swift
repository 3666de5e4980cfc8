import Foundation
import HeraldCore
import Synchronization

/// Per-connection state the behaviour consults: the connection's number (for the log), a cache
/// of provider-token verdicts, and which token the connection currently uses.
///
/// Clients reuse one JWT for up to an hour on every stream of a connection, so verifying the
/// ECDSA signature once per distinct token string and connection keeps the signature check from
/// dominating CPU under load. The cache is bounded: a well-behaved client changes its token at
/// most every 20 minutes, so a handful of entries suffice.
///
/// Only the connection's event loop calls in; the lock is uncontended and exists so that the
/// type is honestly `Sendable` without `@unchecked`.
public final class SimulatorConnection: Sendable {
    /// 1-based, in accept order.
    public let id: Int
    /// The TLS client certificate it presented; nil on a provider-token connection.
    public let clientCertificate: SimulatorClientCertificate?
    static let cacheLimit = 16

    private struct State {
        var verdicts: [String: ProviderTokenVerdict] = [:]
        /// The provider token in force on this connection and when it was adopted.
        var currentToken: String?
        var adoptedAt = Date.distantPast
        /// The team of the first valid provider token: the connection's from then on.
        var team: String?
    }
    private let state = Locked(State())

    public init(id: Int, clientCertificate: SimulatorClientCertificate? = nil) {
        self.id = id
        self.clientCertificate = clientCertificate
    }

    /// The cached verdict for `jwt`, computing it with `verify` on first sight.
    public func providerTokenVerdict(for jwt: String, verify: (String) -> ProviderTokenVerdict) -> ProviderTokenVerdict {
        if let cached = state.withLock({ $0.verdicts[jwt] }) { return cached }
        let verdict = verify(jwt)
        state.withLock { state in
            if state.verdicts.count >= Self.cacheLimit { state.verdicts.removeAll(keepingCapacity: true) }
            state.verdicts[jwt] = verdict
        }
        return verdict
    }

    /// Binds the connection to `team` on its first valid token; false for a later token of
    /// another team. Apple: "APNs doesn't support authentication tokens from multiple developer
    /// accounts over a single connection"; an unrelated key after the first push is 403
    /// `UnrelatedKeyIdInToken` (https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns).
    public func bind(team: String) -> Bool {
        state.withLock { state in
            if let bound = state.team { return bound == team }
            state.team = team
            return true
        }
    }

    /// Makes `jwt` the connection's token unless it replaces another one adopted less than
    /// `minimumInterval` seconds before `now` (Apple's 429 `TooManyProviderTokenUpdates`).
    /// Returns false, keeping the old token in force, when the update is too soon.
    public func adoptProviderToken(_ jwt: String, now: Date, minimumInterval: Int) -> Bool {
        state.withLock { state in
            if state.currentToken == jwt { return true }
            if state.currentToken != nil && now.timeIntervalSince(state.adoptedAt) < Double(minimumInterval) { return false }
            state.currentToken = jwt
            state.adoptedAt = now
            return true
        }
    }
}

/// What the simulator keeps of a client certificate: enough to say in the request log which
/// credential a request came with, nothing secret.
public struct SimulatorClientCertificate: Sendable, Equatable {
    /// The subject's common name, if it has one (Apple's read "Apple Push Services: <bundle id>").
    public var commonName: String?
    public init(commonName: String?) { self.commonName = commonName }
}

/// Hands out connection numbers.
final class ConnectionCounter: Sendable {
    private let last = Atomic<Int>(0)
    func next() -> Int { last.add(1, ordering: .relaxed).newValue }
}
