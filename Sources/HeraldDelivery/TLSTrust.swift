internal import CCurl
import Foundation

/// Which certificate authorities the client trusts for the APNs endpoint.
/// libcurl's CAINFO *replaces* the system store (by default it names the system bundle:
/// https://curl.se/libcurl/c/CURLOPT_CAINFO.html); it does not add to it.
public enum TLSTrust: Sendable, Equatable {
    /// The system trust store (Apple's production and sandbox servers).
    case system
    /// A PEM bundle file (job `apns.ca_file`).
    case caFile(String)
    /// PEM text in memory (the in-process simulator's fresh CA; never written to disk).
    case caPEM(String)

    func apply(to handle: UnsafeMutableRawPointer) throws(DeliveryError) {
        switch self {
        case .system:
            return
        case .caFile(let path):
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_CAINFO, path), "set CA file")
        case .caPEM(let pem):
            var bytes = Array(pem.utf8)
            let code = bytes.withUnsafeMutableBytes { raw -> CURLcode in
                var blob = curl_blob(data: raw.baseAddress, len: raw.count, flags: UInt32(CURL_BLOB_COPY))
                return herald_easy_setopt_ptr(handle, CURLOPT_CAINFO_BLOB, &blob)
            }
            try curlCheck(code, "set CA certificate")
        }
    }
}
