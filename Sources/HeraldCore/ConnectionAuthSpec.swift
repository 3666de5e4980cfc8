/// `apns.certificate`: TLS client-certificate authentication, the alternative to `apns.auth`
/// (Apple: "a certificate-based connection"; requests then carry no `authorization`).
/// Paths are resolved; the password is named by an environment variable, never held here.
public enum CertificateAuthSpec: Sendable, Hashable {
    /// A PKCS#12 bundle (`p12_file`), as Keychain Access exports Apple's push certificate.
    case p12(path: String, passwordEnv: String?)
    /// A PEM certificate (`cert_file`, optionally followed by its chain) and its PEM private key
    /// (`key_file`); `password_env` only when the key is encrypted.
    case pem(certificatePath: String, keyPath: String, passwordEnv: String?)

    /// The environment variable holding the password, if the job names one.
    public var passwordEnv: String? {
        switch self {
        case .p12(_, let e), .pem(_, _, let e): return e
        }
    }
}

/// `apns.proxy`: how connections reach APNs.
public enum ProxySpec: Sendable, Equatable {
    /// `proxy: none`: connect directly, ignoring `https_proxy` in the environment.
    case direct
    /// An HTTP proxy reached with `CONNECT host:443` (a tunnel: TLS stays end to end with APNs).
    /// Credentials come from environment variables, never from the URL or the job file.
    case http(url: String, userEnv: String?, passwordEnv: String?)
    /// A SOCKS5 proxy (RFC 1928): `socks5://host:port` (herald resolves the APNs host and sends
    /// its address) or `socks5h://host:port` (the proxy resolves it). Credentials, from the
    /// environment like `http`'s, go to the proxy as RFC 1929's username and password.
    case socks(url: String, userEnv: String?, passwordEnv: String?)
}
