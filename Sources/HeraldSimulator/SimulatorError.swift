/// Why the simulator could not start, stop or derive a key. Every message is one line that
/// starts with what failed and never contains key material.
public enum SimulatorError: Error, CustomStringConvertible, Equatable {
    /// The listening socket could not be bound (`detail` is e.g. "address in use").
    case cannotBind(host: String, port: Int, detail: String)
    /// A TLS certificate, key or CA file could not be read (`role` says which, e.g. "TLS certificate").
    case unreadableFile(role: String, path: String, detail: String)
    /// A TLS certificate or key was read but is not usable.
    case badTLSMaterial(String)
    /// The configured JWT-verifying public key is not a P-256 SPKI PEM.
    case badPublicKey(String)
    /// A .p8 private key could not be parsed.
    case badPrivateKey(String)
    /// The NDJSON request log could not be opened.
    case cannotOpenLog(path: String, detail: String)
    /// A configuration value is out of range or inconsistent (fault probabilities, counts, prefixes).
    case badConfiguration(String)
    /// The event loop or listening channel failed in some other way.
    case server(String)

    public var description: String {
        switch self {
        case .cannotBind(let host, let port, let detail):
            return "simulator: cannot bind \(host):\(port): \(detail)"
        case .unreadableFile(let role, let path, let detail):
            return "simulator: cannot read \(role) file \(path): \(detail)"
        case .badTLSMaterial(let detail):
            return "simulator: unusable TLS certificate or key: \(detail)"
        case .badPublicKey(let detail):
            return "simulator: provider-token public key is not a P-256 public key PEM: \(detail)"
        case .badPrivateKey(let detail):
            return "simulator: private key is not a P-256 PKCS#8 (.p8) PEM: \(detail)"
        case .cannotOpenLog(let path, let detail):
            return "simulator: cannot open request log \(path): \(detail)"
        case .badConfiguration(let detail):
            return "simulator: bad configuration: \(detail)"
        case .server(let detail):
            return "simulator: \(detail)"
        }
    }
}
