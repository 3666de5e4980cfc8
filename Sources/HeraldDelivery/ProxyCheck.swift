internal import CHTTP2Client
import Foundation

/// What `herald run` asks of the proxy before the audience is read and before the first push, so a
/// proxy that cannot work ends the run at once (exit 2) instead of every recipient being retried
/// as a connection error.
public enum ProxyCheck {
    /// Refuses, before anything is read or sent, a proxy the engine cannot tunnel through: the
    /// job's, or without `apns.proxy` the environment's (`https_proxy`… unless `no_proxy` exempts
    /// the host of `baseURL`), with a scheme other than http://, socks5:// or socks5h://.
    public static func usable(_ proxy: ProxySettings?, baseURL: String,
                              environment: [String: String] = ProcessInfo.processInfo.environment) throws(ProxyError) {
        do {
            _ = try ProxyTunnel.resolve(proxy, apnsHost: URLComponents(string: baseURL)?.host ?? "", environment: environment)
        } catch {
            guard case .engine(let why) = error else { throw .unusable(error.description) }
            throw .unusable(why)
        }
    }

    public enum Outcome: Sendable, Equatable {
        /// The tunnel opened (and TLS and HTTP/2 through it).
        case opened
        /// The proxy refused: `credentials` when it wants them or refused the ones given.
        case refused(String, credentials: Bool)
        /// Anything else, left to the send loop's retries.
        case unreachable(String)
    }

    /// With a SOCKS5 proxy in `settings`, one connection opened through it exactly as the engine
    /// opens its connections (CHTTP2Client's h2_connect, typed by h2_error_kind), then closed; nil
    /// for no proxy or an HTTP one (ConnectionProbe asks those).
    public static func socks(_ settings: ConnectionSettings) -> Outcome? {
        guard let base = URL(string: settings.baseURL), let host = base.host,
              let tunnel = try? ProxyTunnel.resolve(settings.proxy, apnsHost: host), tunnel.kind != .http else { return nil }
        let tls: Nghttp2TLS
        do { tls = try Nghttp2TLS(trust: settings.trust, identity: settings.identity) } catch { return .unreachable(error.description) }
        let port = String(base.port ?? 443)
        var kind = H2_OK
        var err = [CChar](repeating: 0, count: 512)
        let handle = tunnel.withCProxy { proxy in
            h2_connect(tls.context, host.withoutBrackets, port, "\(host):\(port)", proxy, Int32(clamping: settings.connectTimeoutMs),
                       0, &kind, &err, err.count)
        }
        if let handle {
            h2_close(handle)
            return .opened
        }
        let why = Nghttp2Worker.text(err)
        switch kind {
        case H2_ERR_PROXY_AUTH: return .refused(why, credentials: true)
        case H2_ERR_PROXY: return .refused(why, credentials: false)
        default: return .unreachable(why)
        }
    }
}
