internal import CCurl
import Foundation

/// libcurl's process-wide initialisation, done once before the first handle: curl_global_init "is
/// not thread safe" and must precede any other libcurl call made from threads
/// (https://curl.se/libcurl/c/curl_global_init.html). libcurl carries herald's one-off HTTPS calls
/// (`HTTPCall`): channel management, webhooks, cron pings, the Pushgateway.
enum CurlGlobal {
    static let initialised: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
}

func curlCheck(_ code: CURLcode, _ operation: String) throws(DeliveryError) {
    guard code == CURLE_OK else {
        throw .curl(operation: operation, code: Int(code.rawValue), message: String(cString: curl_easy_strerror(code)))
    }
}

/// A libcurl header list of `lines`, owned by the caller (curl_slist_free_all); all or nothing.
func curlHeaderList(_ lines: [String]) throws(DeliveryError) -> UnsafeMutablePointer<curl_slist>? {
    var list: UnsafeMutablePointer<curl_slist>?
    for line in lines {
        guard let next = curl_slist_append(list, line) else {
            if let list { curl_slist_free_all(list) }
            throw .curl(operation: "build headers", code: -1, message: "out of memory")
        }
        list = next
    }
    return list
}
