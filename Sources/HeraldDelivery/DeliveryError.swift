/// Delivery failures an operator must act on. Messages never contain key material or JWTs.
public enum DeliveryError: Error, Equatable, CustomStringConvertible {
    case keyUnreadable(path: String, why: String)
    case keyEnvironmentMissing(variable: String)
    case keyInvalid(source: String, why: String)
    case signingFailed(String)
    case curl(operation: String, code: Int, message: String)
    /// The connection to APNs cannot be set up as configured (endpoint URL, TLS material, proxy).
    case engine(String)

    public var description: String {
        switch self {
        case .keyUnreadable(let p, let why): return "cannot read APNs auth key \(p): \(why)"
        case .keyEnvironmentMissing(let v): return "APNs auth key environment variable \(v) is not set or empty"
        case .keyInvalid(let s, let why): return "APNs auth key \(s) is not a usable ES256 (.p8, PKCS#8 P-256) key: \(why)"
        case .signingFailed(let why): return "could not sign the APNs provider token: \(why)"
        case .curl(let op, let code, let m): return "libcurl error \(code) during \(op): \(m)"
        case .engine(let why): return "APNs connection: \(why)"
        }
    }
}
