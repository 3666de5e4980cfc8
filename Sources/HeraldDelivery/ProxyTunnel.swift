internal import CHTTP2Client
import Foundation

/// The proxy the nghttp2 engine tunnels through (CHTTP2Client's `h2_proxy`, proxy.c), decided once
/// per sender the way libcurl decides it per transfer, so `apns.proxy` and the environment mean
/// what they mean to curl:
/// - `apns.proxy: <scheme>://host:port` (with `user_env`/`password_env`): that proxy, whatever
///   `no_proxy` says; `apns.proxy: none`: direct.
/// - no key: `https_proxy`, `HTTPS_PROXY`, `all_proxy`, `ALL_PROXY`, first one set and not empty,
///   unless `no_proxy`/`NO_PROXY` exempts the APNs host (https://curl.se/libcurl/c/CURLOPT_PROXY.html,
///   https://curl.se/libcurl/c/CURLOPT_NOPROXY.html). A scheme-less value is an HTTP proxy, and a
///   value without a port uses 1080, as libcurl reads them; `user:password@` in it is percent-decoded.
/// Schemes: `http://` (CONNECT; credentials sent as Basic), `socks5://` (RFC 1928: herald resolves
/// the APNs host and sends its address), `socks5h://` (the proxy resolves the name); credentials
/// go to a SOCKS5 proxy as RFC 1929's username and password. Any other scheme (`https://`: TLS to
/// the proxy itself; `socks4://`) is refused before a connection is tried.
struct ProxyTunnel: Equatable, CustomStringConvertible {
    enum Kind: String, Equatable { case http, socks5, socks5h }

    let kind: Kind
    let host: String
    let port: String
    /// HTTP: "Basic …", what goes in Proxy-Authorization, or nil. Never in a description or an error.
    let authorization: String?
    /// SOCKS5: the username and password (RFC 1929), or nil. Never in a description or an error.
    let user: String?
    let password: String?

    static let schemes = "http://, socks5:// or socks5h://"

    var description: String {
        "\(kind.rawValue)://\(host.contains(":") ? "[\(host)]" : host):\(port)\(authorization == nil && user == nil ? "" : " (with credentials)")"
    }

    /// The tunnel for a connection to `apnsHost`, or nil to connect directly.
    static func resolve(_ settings: ProxySettings?, apnsHost: String,
                        environment: [String: String] = ProcessInfo.processInfo.environment) throws(DeliveryError) -> ProxyTunnel? {
        let apnsHost = apnsHost.withoutBrackets
        if let settings {
            guard let url = settings.url else { return nil }
            // The job's URL was checked when the job was read (scheme, host, port, no credentials).
            return try parse(url, what: "apns.proxy", user: settings.user, password: settings.password)
        }
        let set = { (name: String) -> String? in environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        guard let (name, raw) = ProxySettings.environmentVariables.lazy
            .compactMap({ name in set(name).map { (name, $0) } }).first else { return nil }
        if exempts(apnsHost, noProxy: set("no_proxy") ?? set("NO_PROXY")) { return nil }
        return try parse(raw, what: "the environment's \(name)", user: nil, password: nil)
    }

    /// Whether a `no_proxy` list exempts `host`: `*`, the host itself, or a domain it is in (with
    /// or without a leading dot), comma-separated, as libcurl reads it.
    static func exempts(_ host: String, noProxy: String?) -> Bool {
        guard let noProxy else { return false }
        let host = host.lowercased()
        for item in noProxy.split(separator: ",") {
            var entry = item.trimmingCharacters(in: .whitespaces).lowercased()
            if entry == "*" { return true }
            if entry.hasPrefix(".") { entry.removeFirst() }
            entry = entry.withoutBrackets
            if !entry.isEmpty && (host == entry || host.hasSuffix("." + entry)) { return true }
        }
        return false
    }

    private static func parse(_ raw: String, what: String, user: String?, password: String?) throws(DeliveryError) -> ProxyTunnel {
        var text = raw.trimmingCharacters(in: .whitespaces)
        let kind: Kind
        if let scheme = text.range(of: "://") {
            let name = text[..<scheme.lowerBound].lowercased()
            guard let k = Kind(rawValue: name) else {
                throw .engine("\(what): \(name):// proxies are not supported; use \(schemes)")
            }
            kind = k
        } else {
            kind = .http
            text = "http://" + text
        }
        guard let url = URLComponents(string: text), let host = url.host, !host.isEmpty,
              url.path.isEmpty || url.path == "/", url.query == nil else {
            // The value may hold credentials: it is not repeated.
            throw .engine("\(what) is not a proxy URL of the form \(kind.rawValue)://host:port")
        }
        var user = user, password = password
        if user == nil, let u = url.user {
            user = u.removingPercentEncoding ?? u
            password = url.password.map { $0.removingPercentEncoding ?? $0 } ?? ""
        }
        let port = String(url.port ?? 1080)
        guard kind == .http else {
            return ProxyTunnel(kind: kind, host: host.withoutBrackets, port: port, authorization: nil, user: user, password: user == nil ? nil : password ?? "")
        }
        let authorization = user.map { "Basic " + Data("\($0):\(password ?? "")".utf8).base64EncodedString() }
        return ProxyTunnel(kind: kind, host: host.withoutBrackets, port: port, authorization: authorization, user: nil, password: nil)
    }

    /// `body` with this tunnel as CHTTP2Client's `h2_proxy`, whose strings live only during `body`.
    func withCProxy<R>(_ body: (UnsafePointer<h2_proxy>) -> R) -> R {
        let cKind = switch kind {
        case .http: H2_PROXY_HTTP
        case .socks5: H2_PROXY_SOCKS5
        case .socks5h: H2_PROXY_SOCKS5H
        }
        return host.withCString { h in
            port.withCString { p in
                Self.withOptionalCString(authorization) { a in
                    Self.withOptionalCString(user) { u in
                        Self.withOptionalCString(password) { pw in
                            var proxy = h2_proxy(kind: cKind, host: h, port: p, authorization: a, user: u, password: pw)
                            return body(&proxy)
                        }
                    }
                }
            }
        }
    }

    private static func withOptionalCString<R>(_ s: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
        guard let s else { return body(nil) }
        return s.withCString { body($0) }
    }
}

extension String {
    /// An IPv6 literal as URLs write it (`[::1]`) without its brackets, as sockets and TLS take it.
    var withoutBrackets: String { hasPrefix("[") && hasSuffix("]") ? String(dropFirst().dropLast()) : self }
}
