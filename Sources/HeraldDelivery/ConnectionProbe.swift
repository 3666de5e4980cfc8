internal import CHTTP2Client
import Foundation

/// One connection made by the sender's own connect (`Nghttp2Endpoint`: the same trust, client
/// certificate and proxy tunnel), up to the server's HTTP/2 SETTINGS, then closed: no request,
/// nothing reaches any device.
///
/// Why: a refused client certificate does not surface as an APNs answer. With TLS 1.2 the
/// handshake fails with an alert ("unknown ca", "certificate required"); with TLS 1.3 the
/// client's handshake completes and the server's alert comes after it, before its SETTINGS
/// (RFC 8446 §4.4.2.4). Either is a connect failure to the send loop, retried with backoff until
/// the run gives up with exit 4 ("rerun"), which is wrong for a credential that will never work.
/// The probe tells them apart up front, from CHTTP2Client's error kind.
public enum ConnectionProbe {
    public enum Outcome: Sendable, Equatable {
        /// The server spoke HTTP/2 to us: TLS (and the client certificate, and the tunnel) accepted.
        case accepted
        /// The server refused us with a TLS alert (OpenSSL's text for it).
        case refused(String)
        /// The server's certificate did not verify.
        case untrusted(String)
        /// The proxy refused the tunnel (the text says how: an HTTP status, a SOCKS reply);
        /// `credentials`: it wants them, or refused the ones given.
        case proxyRefused(String, credentials: Bool)
        /// Anything else (no route, timeout, the server closed without a word): transient as far
        /// as the probe can tell; the send loop's own retries handle it.
        case unreachable(String)
    }

    public static func run(_ settings: ConnectionSettings) -> Outcome {
        let endpoint: Nghttp2Endpoint
        do { endpoint = try Nghttp2Endpoint(settings) } catch { return .unreachable(error.description) }
        switch endpoint.connect() {
        case .success(let handle):
            h2_close(handle)
            return .accepted
        case .failure(let f):
            switch f.kind {
            case .tlsRefused: return .refused(f.detail)
            case .tlsTrust: return .untrusted(f.detail)
            case .proxyRefused: return .proxyRefused(f.detail, credentials: false)
            case .proxyCredentials: return .proxyRefused(f.detail, credentials: true)
            default: return .unreachable(f.detail)
            }
        }
    }
}
