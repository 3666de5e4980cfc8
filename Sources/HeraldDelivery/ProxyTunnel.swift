import Foundation

/// The HTTP proxy the nghttp2 engine tunnels through (CHTTP2Client's `h2_proxy`), decided once per
/// sender the way libcurl decides it per transfer for the libcurl engine, so `apns.proxy` and the
/// environment mean the same on both engines:
/// - `apns.proxy: http://host:port` (with `user_env`/`password_env`): that proxy, whatever
///   `no_proxy` says; `apns.proxy: none`: direct.
/// - no key: `https_proxy`, `HTTPS_PROXY`, `all_proxy`, `ALL_PROXY`, first one set and not empty,
///   unless `no_proxy`/`NO_PROXY` exempts the APNs host (https://curl.se/libcurl/c/CURLOPT_PROXY.html,
///   https://curl.se/libcurl/c/CURLOPT_NOPROXY.html). A scheme-less value is an HTTP proxy, and a
///   value without a port uses 1080, as libcurl reads them; `user:password@` in it is percent-decoded
///   and sent as Basic.
/// Only HTTP proxies tunnel here (`https://` and SOCKS proxies need engine: libcurl).
struct ProxyTunnel: Equatable, CustomStringConvertible {
    let host: String
    let port: String
    /// "Basic …", or nil: what goes in Proxy-Authorization. Never in a description or an error.
    let authorization: String?

    var description: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)\(authorization == nil ? "" : " (with credentials)")" }

    /// The tunnel for a connection to `apnsHost`, or nil to connect directly.
    static func resolve(_ settings: ProxySettings?, apnsHost: String,
                        environment: [String: String] = ProcessInfo.processInfo.environment) throws(DeliveryError) -> ProxyTunnel? {
        let apnsHost = apnsHost.withoutBrackets
        if let settings {
            guard let url = settings.url else { return nil }
            // The job's URL was checked when the job was read (http://host:port, no credentials).
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
        if let scheme = text.range(of: "://") {
            let name = text[..<scheme.lowerBound].lowercased()
            guard name == "http" else {
                throw .engine("\(what) is a \(name):// proxy; engine nghttp2 tunnels only through http:// proxies, use engine: libcurl")
            }
        } else {
            text = "http://" + text
        }
        guard let url = URLComponents(string: text), let host = url.host, !host.isEmpty,
              url.path.isEmpty || url.path == "/", url.query == nil else {
            // The value may hold credentials: it is not repeated.
            throw .engine("\(what) is not a proxy URL of the form http://host:port")
        }
        var user = user, password = password
        if user == nil, let u = url.user {
            user = u.removingPercentEncoding ?? u
            password = url.password.map { $0.removingPercentEncoding ?? $0 } ?? ""
        }
        let authorization = user.map { "Basic " + Data("\($0):\(password ?? "")".utf8).base64EncodedString() }
        return ProxyTunnel(host: host.withoutBrackets, port: String(url.port ?? 1080), authorization: authorization)
    }
}

extension String {
    /// An IPv6 literal as URLs write it (`[::1]`) without its brackets, as sockets and TLS take it.
    var withoutBrackets: String { hasPrefix("[") && hasSuffix("]") ? String(dropFirst().dropLast()) : self }
}
