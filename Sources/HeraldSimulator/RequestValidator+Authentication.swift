import Foundation
import HeraldCore

/// Who sent a request, checked the same way for device pushes, broadcasts and channel management.
///
/// A connection is a certificate connection when it presented a client certificate, or when no
/// provider-token key is configured (the TLS handshake then required one). Apple ignores
/// `authorization` on such a connection; every other request must carry a provider token
/// (https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns).
extension RequestValidator {
    /// What the credential check found.
    struct Authentication {
        /// kid/iss/iat of the provider token, if one could be decoded (for the log).
        var claims: ProviderTokenClaims?
        /// The request proved its sender (see `SimulatorVerdict.authenticated`).
        var authenticated: Bool
        /// Why the request is refused, if it is.
        var problem: APNsReason?
        /// The apps (bundle ids) the credential may send to; empty: any.
        var apps: [String] = []
        /// The credential is the connection's client certificate.
        var certificate = false
    }

    func isCertificateConnection(_ connection: SimulatorConnection) -> Bool {
        verifier == nil || connection.clientCertificate != nil
    }

    /// The credential check: a certificate connection passes (its certificate was verified in the
    /// handshake); otherwise the provider token is checked in the order of step 4.
    func authenticate(_ request: SimulatorRequest, on connection: SimulatorConnection, now: Date) -> Authentication {
        guard let verifier, connection.clientCertificate == nil else {
            return Authentication(claims: nil, authenticated: true, apps: certificateApps, certificate: true)
        }
        guard let authorization = request.header("authorization"), !authorization.isEmpty else {
            return Authentication(claims: nil, authenticated: false, problem: "MissingProviderToken")
        }
        guard authorization.utf8.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            return Authentication(claims: nil, authenticated: false, problem: "InvalidProviderToken")
        }
        let jwt = String(authorization.dropFirst(7))
        let verdict = connection.providerTokenVerdict(for: jwt, verify: verifier.verify)
        func refused(_ reason: APNsReason) -> Authentication {
            Authentication(claims: verdict.claims, authenticated: false, problem: reason)
        }
        guard case .valid(let valid) = verdict, let iat = valid.iat, let kid = valid.kid, let team = valid.iss else {
            return refused("InvalidProviderToken")
        }
        if Int(now.timeIntervalSince1970) - iat > jwtMaxAgeSeconds { return refused("ExpiredProviderToken") }
        guard connection.bind(team: team) else { return refused("UnrelatedKeyIdInToken") }
        guard connection.adoptProviderToken(jwt, now: now, minimumInterval: tokenUpdateIntervalSeconds) else {
            return refused("TooManyProviderTokenUpdates")
        }
        return Authentication(claims: valid, authenticated: true, apps: tokenApps[kid] ?? [])
    }
}
