internal import CHTTP2Client
import Foundation

/// How every connection of a sender is made, decided once: the host, port and `:authority`, the
/// TLS context (trust and client certificate, `Nghttp2TLS`) and the proxy tunnel (`ProxyTunnel`).
/// The sender's connections and the pre-flight check (`ConnectionProbe`) both connect through it,
/// so the check's verdict is the sender's.
final class Nghttp2Endpoint: @unchecked Sendable {
    // @unchecked: nothing changes after init; the TLS context is safe to share once built.
    let host: String
    let port: String
    let authority: String
    let tunnel: ProxyTunnel?
    private let tls: Nghttp2TLS
    private let connectTimeoutMs: Int
    private let keepAliveSeconds: Int

    init(_ settings: ConnectionSettings) throws(DeliveryError) {
        guard let url = URL(string: settings.baseURL), url.scheme == "https", let host = url.host, !host.isEmpty else {
            throw .engine("\(settings.baseURL) is not an https:// URL")
        }
        self.host = host.withoutBrackets
        port = String(url.port ?? 443)
        authority = settings.authority
        tunnel = try ProxyTunnel.resolve(settings.proxy, apnsHost: self.host)
        tls = try Nghttp2TLS(trust: settings.trust, identity: settings.identity)
        connectTimeoutMs = settings.connectTimeoutMs
        keepAliveSeconds = settings.keepAliveSeconds
    }

    /// One connection, TLS and the server's SETTINGS included; blocks at most the connect timeout.
    func connect() -> Result<OpaquePointer, TransportFailure> {
        var kind = H2_OK
        var err = [CChar](repeating: 0, count: 512)
        let connect = { (proxy: UnsafePointer<h2_proxy>?) in
            h2_connect(self.tls.context, self.host, self.port, self.authority, proxy, Int32(clamping: self.connectTimeoutMs),
                       Int32(clamping: self.keepAliveSeconds), &kind, &err, err.count)
        }
        let handle: OpaquePointer?
        if let tunnel {
            handle = tunnel.withCProxy(connect)
        } else {
            handle = connect(nil)
        }
        guard let handle else {
            let why = Self.text(err)
            let kind = Self.kind(of: kind)
            // A trust failure's text stands alone ("TLS trust: …"): it is what the run stops with.
            return .failure(TransportFailure(kind, kind == .tlsTrust ? why : "\(host):\(port)\(tunnel.map { " via \($0)" } ?? ""): \(why)"))
        }
        return .success(handle)
    }

    /// CHTTP2Client's error kinds as herald's.
    static func kind(of k: h2_error_kind) -> TransportFailure.Kind {
        switch k {
        case H2_ERR_RESOLVE: return .nameNotResolved
        case H2_ERR_CONNECT: return .connectFailed
        case H2_ERR_TRUST: return .tlsTrust
        case H2_ERR_TLS_REFUSED: return .tlsRefused
        case H2_ERR_TLS, H2_ERR_TLS_SETUP: return .tlsHandshake
        case H2_ERR_PROXY: return .proxyRefused
        case H2_ERR_PROXY_AUTH: return .proxyCredentials
        case H2_ERR_PROTOCOL: return .protocolError
        case H2_ERR_MEMORY: return .neverSent
        default: return .connectionLost
        }
    }

    /// The C string in a buffer CHTTP2Client filled.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
