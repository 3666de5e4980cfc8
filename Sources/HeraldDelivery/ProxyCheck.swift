import Foundation

/// What `herald run` asks of the proxy before the audience is read, so a proxy the connections
/// cannot tunnel through ends the run at once (exit 2) instead of every recipient being retried as
/// a connection error. (Whether the proxy opens the tunnel is `ConnectionProbe`'s to find out.)
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
}
