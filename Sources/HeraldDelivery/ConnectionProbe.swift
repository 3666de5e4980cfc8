internal import CCurl
import Foundation

/// One connection made exactly as the sender makes them (trust, client certificate, proxy
/// tunnel), carrying one `HEAD /` request: not a notification, nothing reaches any device (APNs
/// answers it with an error status, which is all the probe needs: TLS and the tunnel worked).
///
/// Why: a refused client certificate does not surface as an APNs answer. With TLS 1.2 the
/// handshake fails with an alert ("unknown ca", "certificate required"); with TLS 1.3 the
/// client's handshake completes and the server then closes the connection. To the send loop either
/// is a transport failure, retried with backoff until the run gives up, with exit 4 ("rerun"),
/// which is wrong for a credential that will never work. The probe tells them apart up front.
/// (A raw HTTP/2 preface over CONNECT_ONLY would avoid the request, but libcurl 7.88 refuses
/// curl_easy_send on a connection that negotiated h2, and APNs offers nothing but h2.)
public enum ConnectionProbe {
    public enum Outcome: Sendable, Equatable {
        /// The server answered over HTTP: TLS (and the client certificate, and the tunnel) accepted.
        case accepted
        /// The server refused us with a TLS alert (this is OpenSSL's text for it).
        case refused(String)
        /// The proxy answered CONNECT with this HTTP status (407: credentials, 403: not allowed).
        case proxyRefused(status: Int)
        /// Anything else (no route, timeout, the server closed without a word): transient as far
        /// as the probe can tell; the send loop's own retries handle it.
        case unreachable(String)
    }

    public static func run(_ settings: ConnectionSettings, timeoutMs: Int = 10_000) -> Outcome {
        guard CurlGlobal.initialised, let h = curl_easy_init() else { return .unreachable("libcurl could not be initialised") }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer { curl_easy_cleanup(h); errorBuffer.deallocate() }
        do throws(DeliveryError) {
            try curlCheck(herald_easy_setopt_cstr(h, CURLOPT_URL, settings.baseURL + "/"), "set URL")
            try curlCheck(herald_easy_setopt_long(h, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)), "set HTTP/2")
            // TLS 1.2 exactly: there the server judges the client certificate inside the handshake,
            // so a refusal is the handshake's own alert. Under TLS 1.3 the client's handshake ends
            // first and the server just closes, which libcurl reports like any dropped connection.
            try curlCheck(herald_easy_setopt_long(h, CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2) | Int(CURL_SSLVERSION_MAX_TLSv1_2)), "use TLS 1.2")
            try curlCheck(herald_easy_setopt_long(h, CURLOPT_SSL_VERIFYPEER, 1), "verify peer")
            try curlCheck(herald_easy_setopt_long(h, CURLOPT_SSL_VERIFYHOST, 2), "verify host")
            try curlCheck(herald_easy_setopt_long(h, CURLOPT_NOSIGNAL, 1), "set nosignal")
            try curlCheck(herald_easy_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, timeoutMs), "set connect timeout")
            try curlCheck(herald_easy_setopt_long(h, CURLOPT_TIMEOUT_MS, timeoutMs), "set timeout")
            try curlCheck(herald_easy_setopt_long(h, CURLOPT_NOBODY, 1), "HEAD request")
            try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_ERRORBUFFER, errorBuffer), "set error buffer")
            try settings.trust.apply(to: h)
            try settings.identity?.apply(to: h)
            try ProxySettings.apply(settings.proxy, to: h)
        } catch {
            return .unreachable(error.description)
        }
        func failure(_ code: CURLcode) -> Outcome {
            var connectCode = 0
            _ = herald_easy_getinfo_long(h, CURLINFO_HTTP_CONNECTCODE, &connectCode)
            if connectCode >= 300 { return .proxyRefused(status: connectCode) }
            var text = String(cString: errorBuffer)
            if text.isEmpty { text = String(cString: curl_easy_strerror(code)) }
            // OpenSSL names a received alert "…alert unknown ca", "…alert certificate required", …
            if (code == CURLE_SSL_CONNECT_ERROR || code == CURLE_RECV_ERROR) && text.contains("alert") { return .refused(text) }
            return .unreachable("curl error \(code.rawValue): \(text)")
        }

        let performed = curl_easy_perform(h)
        guard performed == CURLE_OK else { return failure(performed) }
        var status = 0
        _ = herald_easy_getinfo_long(h, CURLINFO_RESPONSE_CODE, &status)
        return status > 0 ? .accepted : .unreachable("no HTTP answer")
    }
}
