internal import CCurl
import Foundation

/// One easy handle kept for a series of `HTTPCall`s to the same server (a webhook receiving a
/// batch every few seconds), so its connection, and its TLS session, are reused instead of opened
/// for each request: libcurl keeps "a connection cache" per easy handle
/// (https://curl.se/libcurl/c/libcurl-easy.html, "Persistent Connections"). One caller at a time:
/// an easy handle must not be used by two threads at once (https://curl.se/libcurl/c/threadsafe.html).
public final class HTTPSession {
    private let handle: UnsafeMutableRawPointer?
    /// New connections the last call opened (CURLINFO_NUM_CONNECTS): 0 when it reused one.
    public private(set) var lastConnects = 0

    public init() { handle = curl_easy_init() }

    deinit { if let handle { curl_easy_cleanup(handle) } }

    /// The call made on the kept handle, every option set again from a reset.
    public func perform(_ call: HTTPCall) -> Result<HTTPCall.Answer, HTTPCallError> {
        guard let handle else { return .failure(.transport(host: call.host, code: -1, message: "out of memory")) }
        curl_easy_reset(handle)
        let result = call.perform(on: handle)
        var n = 0
        _ = herald_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &n)
        lastConnects = n
        return result
    }
}
