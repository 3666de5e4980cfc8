import Crypto
import Foundation

/// The parts of a provider token (JWT) that may be logged: never the token text or signature.
public struct ProviderTokenClaims: Sendable, Equatable {
    public var kid: String?
    public var iss: String?
    public var iat: Int?
    public init(kid: String?, iss: String?, iat: Int?) { self.kid = kid; self.iss = iss; self.iat = iat }
}

/// What checking one JWT string found, independent of the current time (age is checked per
/// request against `claims.iat`, so one cached verdict stays right for the connection's life).
public enum ProviderTokenVerdict: Sendable, Equatable {
    /// Header, claims and signature check out; `claims.iat` is present.
    case valid(ProviderTokenClaims)
    /// Not usable; `claims` holds whatever could be decoded (for the log), `why` is for tests and debugging.
    case invalid(ProviderTokenClaims?, why: String)

    public var claims: ProviderTokenClaims? {
        switch self {
        case .valid(let c): return c
        case .invalid(let c, _): return c
        }
    }
}

/// Verifies APNs provider tokens the way Apple describes them (https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns):
/// header `{"alg":"ES256","kid":"<Key ID>"}`, claims `{"iss":"<Team ID>","iat":<epoch s>}`,
/// signature the 64-byte raw R‖S of ECDSA P-256 over SHA-256, all base64url without padding.
/// "APNs supports only the ES256 algorithm." The header's `kid` picks one of the configured keys;
/// the token must then carry that key's team as `iss` and verify with its public key.
public struct ProviderTokenVerifier: Sendable {
    struct Key: Sendable {
        let teamId: String
        let publicKey: P256.Signing.PublicKey
    }
    /// By key ID.
    let keys: [String: Key]

    /// One key (the single-team simulator).
    public init(keyId: String, teamId: String, publicKeyPEM: String) throws(SimulatorError) {
        try self.init(keys: [SimulatorTokenKey(teamId: teamId, keyId: keyId, publicKeyPEM: publicKeyPEM)])
    }

    /// Several teams' keys; key IDs must be distinct (`SimulatorConfiguration.validate`).
    public init(keys: [SimulatorTokenKey]) throws(SimulatorError) {
        var byId: [String: Key] = [:]
        for key in keys {
            do {
                byId[key.keyId] = Key(teamId: key.teamId, publicKey: try P256.Signing.PublicKey(pemRepresentation: key.publicKeyPEM))
            } catch {
                throw .badPublicKey("key \(key.keyId): \(error)")
            }
        }
        self.keys = byId
    }

    private struct Header: Decodable { var alg: String?; var kid: String? }
    private struct Claims: Decodable { var iss: String?; var iat: Int? }

    /// Checks structure, algorithm, key ID, team ID, presence of `iat` and the signature.
    /// Deliberately does not look at the clock: see `ProviderTokenVerdict`.
    public func verify(_ jwt: String) -> ProviderTokenVerdict {
        let parts = jwt.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .invalid(nil, why: "expected 3 dot-separated parts, found \(parts.count)") }
        guard let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
              let signatureBytes = Base64URL.decode(parts[2]) else {
            return .invalid(nil, why: "a part is not base64url")
        }
        let decoder = JSONDecoder()
        guard let header = try? decoder.decode(Header.self, from: Data(headerBytes)) else {
            return .invalid(nil, why: "header is not a JSON object")
        }
        let claims = try? decoder.decode(Claims.self, from: Data(claimBytes))
        let logged = ProviderTokenClaims(kid: header.kid, iss: claims?.iss, iat: claims?.iat)
        guard header.alg == "ES256" else { return .invalid(logged, why: "alg is not ES256") }
        guard let kid = header.kid, let key = keys[kid] else { return .invalid(logged, why: "kid names no configured key") }
        guard let claims else { return .invalid(logged, why: "claims are not a JSON object with iss/iat") }
        guard claims.iss == key.teamId else { return .invalid(logged, why: "iss is not the team of the key kid names") }
        guard claims.iat != nil else { return .invalid(logged, why: "iat is missing") }
        guard signatureBytes.count == 64,
              let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes) else {
            return .invalid(logged, why: "signature is not a 64-byte raw ECDSA P-256 signature")
        }
        // The signing input is the first two parts exactly as sent, joined by the dot.
        let signingInput = jwt.utf8.prefix(parts[0].count + 1 + parts[1].count)
        guard key.publicKey.isValidSignature(signature, for: Data(signingInput)) else {
            return .invalid(logged, why: "signature does not verify with the public key kid names")
        }
        return .valid(logged)
    }
}

/// Base64url (RFC 4648 §5) without padding, as JWTs use it.
enum Base64URL {
    static func decode<C: Collection>(_ text: C) -> [UInt8]? where C.Element == UInt8 {
        var standard = [UInt8]()
        standard.reserveCapacity(text.count + 3)
        for byte in text {
            switch byte {
            case UInt8(ascii: "-"): standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): standard.append(UInt8(ascii: "/"))
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): return nil
            default: standard.append(byte)
            }
        }
        if standard.count % 4 == 1 { return nil }
        while standard.count % 4 != 0 { standard.append(UInt8(ascii: "=")) }
        guard let data = Data(base64Encoded: Data(standard)) else { return nil }
        return [UInt8](data)
    }
}
