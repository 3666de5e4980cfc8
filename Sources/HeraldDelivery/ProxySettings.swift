internal import CCurl
import Foundation
import HeraldCore

/// How connections reach APNs (`apns.proxy`): directly, or through a proxy's tunnel (HTTP CONNECT
/// or SOCKS5), inside which TLS (and the certificate or token) stays end to end between herald and
/// APNs. Credentials are read from the environment when the run starts and go only to the proxy,
/// through libcurl (CURLOPT_PROXYUSERNAME/PROXYPASSWORD) or the nghttp2 engine's tunnel
/// (`ProxyTunnel`); `description` shows the URL alone.
public struct ProxySettings: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// `http://host:port`, `socks5://host:port` or `socks5h://host:port`, or nil to connect directly.
    public let url: String?
    let user: String?
    let password: String?

    public static let direct = ProxySettings(url: nil, user: nil, password: nil)

    public static func http(_ url: String) -> ProxySettings { ProxySettings(url: url, user: nil, password: nil) }

    init(url: String?, user: String?, password: String?) { self.url = url; self.user = user; self.password = password }

    public static func resolve(_ spec: ProxySpec, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ProxyError) -> ProxySettings {
        switch spec {
        case .direct:
            return .direct
        case .http(let url, let userEnv, let passwordEnv), .socks(let url, let userEnv, let passwordEnv):
            var found: [String] = []
            for name in [userEnv, passwordEnv].compactMap({ $0 }) {
                guard let v = environment[name], !v.isEmpty else { throw .credentialsMissing(field: name == userEnv ? "user_env" : "password_env", variable: name) }
                found.append(v)
            }
            return ProxySettings(url: url, user: found.first, password: found.count > 1 ? found[1] : nil)
        }
    }

    public var description: String { url.map { "proxy \($0)\(user == nil ? "" : " (with credentials)")" } ?? "no proxy" }
    public var debugDescription: String { description }

    /// The variables that name a proxy for https URLs, in the order libcurl 7.88 reads them.
    static let environmentVariables = ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]

    /// Whether the environment names a proxy for https URLs, as libcurl 7.88 looks for one
    /// (https_proxy, HTTPS_PROXY, all_proxy, ALL_PROXY; empty counts as unset). Read once: libcurl
    /// reads them, and no_proxy, again for every transfer (six getenv calls per push).
    static let environmentNamesAProxy = environmentVariables.contains { name in
        guard let v = getenv(name) else { return false }
        return v.pointee != 0
    }

    /// Applies `settings` to a handle; nil is libcurl's default, the environment's proxy, which
    /// (when there is none) is spelt out as "direct" so libcurl stops looking for one per transfer.
    static func apply(_ settings: ProxySettings?, to handle: UnsafeMutableRawPointer) throws(DeliveryError) {
        if let settings {
            try settings.apply(to: handle)
        } else if !environmentNamesAProxy {
            try ProxySettings.direct.apply(to: handle)
        }
    }

    func apply(to handle: UnsafeMutableRawPointer) throws(DeliveryError) {
        guard let url else {
            // An empty proxy turns off libcurl's use of https_proxy/all_proxy from the environment;
            // an empty no_proxy list keeps it from reading no_proxy, which has nothing to exempt.
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_PROXY, ""), "disable proxy")
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_NOPROXY, ""), "ignore no_proxy")
            return
        }
        // A socks5:// or socks5h:// URL's scheme overrides CURLOPT_PROXYTYPE, and HTTPPROXYTUNNEL
        // applies to HTTP proxies only (https://curl.se/libcurl/c/CURLOPT_PROXY.html).
        try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_PROXY, url), "set proxy")
        try curlCheck(herald_easy_setopt_long(handle, CURLOPT_PROXYTYPE, Int(CURLPROXY_HTTP.rawValue)), "set proxy type")
        try curlCheck(herald_easy_setopt_long(handle, CURLOPT_HTTPPROXYTUNNEL, 1), "tunnel through the proxy")
        // The job's proxy applies to APNs whatever no_proxy in the environment says.
        try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_NOPROXY, ""), "ignore no_proxy")
        if let user {
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_PROXYUSERNAME, user), "set proxy user")
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_PROXYPASSWORD, password ?? ""), "set proxy password")
            // Basic, sent with the first CONNECT (CURLAUTH_BASIC is 1 << 0, a cast macro Swift cannot
            // import): what HTTP proxies ask for, without the extra 407 round trip of negotiating.
            try curlCheck(herald_easy_setopt_long(handle, CURLOPT_PROXYAUTH, 1), "set proxy authentication")
        }
    }
}

/// Why the job's proxy cannot be used. Messages name the job field, never a credential.
public enum ProxyError: Error, Equatable, CustomStringConvertible {
    case credentialsMissing(field: String, variable: String)
    /// A proxy whose scheme herald cannot tunnel through (`https://`, `socks4://`): what says so.
    case unusable(String)

    public var description: String {
        switch self {
        case .credentialsMissing(let field, let v): return "apns.proxy.\(field): environment variable \(v) is not set or empty"
        case .unusable(let why): return why
        }
    }
}
