import Foundation
import HeraldCore
import Yams

/// `apns.certificate` and `apns.proxy`. The loader checks shapes and that files exist; secrets
/// (the .p12/key password, proxy credentials) stay in the environment and are read only when a
/// connection is made, so no secret ever passes through the job or its error messages.
extension Context {
    func parseCertificate(_ m: inout YAMLMapping) throws(JobError) -> CertificateAuthSpec? {
        guard var c = try m.mapping("certificate") else { return nil }
        let p12 = try c.string("p12_file")
        let cert = try c.string("cert_file")
        let key = try c.string("key_file")
        let passwordEnv = try c.string("password_env")
        if let e = passwordEnv, !Self.isEnvironmentName(e) {
            // The value is not echoed: it may be the password itself, written in the wrong place.
            throw c.error("password_env", "must name an environment variable (letters, digits, _); the password itself never goes in the job file")
        }
        try c.finish(known: ["p12_file", "cert_file", "key_file", "password_env"])
        switch (p12, cert, key) {
        case (let p?, nil, nil):
            return .p12(path: try existing(p, key: "p12_file", in: c), passwordEnv: passwordEnv)
        case (nil, let cf?, let kf?):
            return .pem(certificatePath: try existing(cf, key: "cert_file", in: c),
                        keyPath: try existing(kf, key: "key_file", in: c), passwordEnv: passwordEnv)
        case (nil, _?, nil): throw JobError(file: file, line: c.line, "\(c.path).cert_file needs key_file (the PEM private key)")
        case (nil, nil, _?): throw JobError(file: file, line: c.line, "\(c.path).key_file needs cert_file (the PEM certificate)")
        case (nil, nil, nil): throw JobError(file: file, line: c.line, "\(c.path) needs p12_file, or cert_file and key_file")
        default: throw JobError(file: file, line: c.line, "\(c.path) takes p12_file or cert_file + key_file, not both")
        }
    }

    /// `proxy: <scheme>://host:port`, `proxy: none`, or `{ url, user_env, password_env }`; the
    /// schemes the engine tunnels through are http:// (CONNECT), socks5:// and socks5h:// (RFC 1928).
    func parseProxy(_ m: inout YAMLMapping) throws(JobError) -> ProxySpec? {
        guard let (node, line) = m.node("proxy") else { return nil }
        var url: String
        var userEnv: String?
        var passwordEnv: String?
        switch node {
        case .scalar(let s):
            if s.style == .plain && node.null != nil { return nil }
            url = s.string
        case .mapping:
            var p = try YAMLMapping(node, path: "apns.proxy", file: file)
            url = try p.requiredString("url")
            userEnv = try p.string("user_env")
            passwordEnv = try p.string("password_env")
            for (k, v) in [("user_env", userEnv), ("password_env", passwordEnv)] {
                if let v, !Self.isEnvironmentName(v) { throw p.error(k, "must name an environment variable (letters, digits, _); credentials never go in the job file") }
            }
            if (userEnv == nil) != (passwordEnv == nil) {
                throw JobError(file: file, line: p.line, "apns.proxy needs both user_env and password_env, or neither")
            }
            try p.finish(known: ["url", "user_env", "password_env"])
        default:
            throw JobError(file: file, line: line, "apns.proxy must be a proxy URL (\(Self.proxySchemes)), none, or { url, user_env, password_env }")
        }
        if url == "none" && userEnv == nil { return .direct }
        guard let u = URLComponents(string: url), let scheme = u.scheme?.lowercased(), let host = u.host, !host.isEmpty else {
            throw JobError(file: file, line: line, "apns.proxy must be a proxy URL (\(Self.proxySchemes)) or none, not \"\(SecretRedaction.withoutCredentials(url))\"")
        }
        if u.user != nil || u.password != nil {
            throw JobError(file: file, line: line, "apns.proxy must not carry credentials in its URL (\(SecretRedaction.withoutCredentials(url))): "
                           + "give { url, user_env, password_env } so they stay in the environment")
        }
        // An https:// proxy would need TLS to the proxy inside which APNs' own TLS runs; herald's
        // engine speaks plain TCP to the proxy, so it is refused here rather than at the first push.
        guard ["http", "socks5", "socks5h"].contains(scheme) else {
            throw JobError(file: file, line: line, "apns.proxy: \(scheme):// proxies are not supported; use \(Self.proxySchemes) "
                           + "(TLS to APNs stays end to end inside the tunnel either way)")
        }
        guard u.path.isEmpty || u.path == "/", u.query == nil else {
            throw JobError(file: file, line: line, "apns.proxy must be \(scheme)://host:port with no path, not \"\(SecretRedaction.withoutCredentials(url))\"")
        }
        // The default port: HTTP's for http://; for SOCKS, 1080 (IANA's, and libcurl's for any proxy).
        // URLComponents keeps an IPv6 literal's brackets in `host`.
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        url = "\(scheme)://\(bare.contains(":") ? "[\(bare)]" : bare):\(u.port ?? (scheme == "http" ? 80 : 1080))"
        return scheme == "http" ? .http(url: url, userEnv: userEnv, passwordEnv: passwordEnv) : .socks(url: url, userEnv: userEnv, passwordEnv: passwordEnv)
    }

    static let proxySchemes = "http://, socks5:// or socks5h://"

    private func existing(_ written: String, key: String, in m: YAMLMapping) throws(JobError) -> String {
        let path = resolve(written)
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw m.error(key, "names a file that does not exist or cannot be read: \(written) (looked for \(path))")
        }
        return path
    }

    static func isEnvironmentName(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return s.unicodeScalars.allSatisfy { $0.isASCII && ($0 == "_" || CharacterSet.alphanumerics.contains($0)) }
    }
}
