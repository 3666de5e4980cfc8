internal import CCurl
import Foundation

/// libcurl's process-wide initialisation, done once before the first handle.
enum CurlGlobal {
    static let initialised: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
}

func curlCheck(_ code: CURLcode, _ operation: String) throws(DeliveryError) {
    guard code == CURLE_OK else {
        throw .curl(operation: operation, code: Int(code.rawValue), message: String(cString: curl_easy_strerror(code)))
    }
}

func curlCheck(_ code: CURLMcode, _ operation: String) throws(DeliveryError) {
    guard code == CURLM_OK else {
        throw .curl(operation: operation, code: Int(code.rawValue), message: String(cString: curl_multi_strerror(code)))
    }
}

func curlCheck(_ code: CURLUcode, _ operation: String) throws(DeliveryError) {
    guard code == CURLUE_OK else {
        throw .curl(operation: operation, code: Int(code.rawValue), message: String(cString: curl_url_strerror(code)))
    }
}

/// Owns one CURLM handle. One multi handle drives one HTTP/2 connection: a host cap of 1
/// (https://curl.se/libcurl/c/CURLMOPT_MAX_HOST_CONNECTIONS.html: "When the limit is reached, new
/// sessions are kept pending until a connection becomes available") and a stream limit at least
/// the requests in flight (https://curl.se/libcurl/c/CURLMOPT_MAX_CONCURRENT_STREAMS.html, default
/// 100); without them libcurl opens more connections instead of waiting for a stream.
final class CurlMulti {
    let handle: UnsafeMutableRawPointer

    init(maxStreams: Int) throws(DeliveryError) {
        guard CurlGlobal.initialised, let h = curl_multi_init() else {
            throw .curl(operation: "curl_multi_init", code: -1, message: "libcurl could not be initialised")
        }
        handle = h
        try curlCheck(herald_multi_setopt_long(h, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX)), "set multiplexing")
        try curlCheck(herald_multi_setopt_long(h, CURLMOPT_MAX_HOST_CONNECTIONS, 1), "set host connection cap")
        try curlCheck(herald_multi_setopt_long(h, CURLMOPT_MAX_CONCURRENT_STREAMS, maxStreams), "set concurrent streams")
    }

    deinit { curl_multi_cleanup(handle) }
}
