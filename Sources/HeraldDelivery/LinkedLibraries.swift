internal import CCurl
internal import CHTTP2Client
internal import COpenSSL

/// The C libraries the sender runs on, as loaded at run time (not as herald was built against):
/// what `herald --version` prints, and what a bug report about the delivery engine needs.
public enum LinkedLibraries {
    /// libcurl's version, "7.88.1" (https://curl.se/libcurl/c/curl_version_info.html).
    public static var libcurl: String { info.map { String(cString: $0.version) } ?? "unknown" }

    /// The nghttp2 herald's connections run on, "1.52.0" (https://nghttp2.org/documentation/nghttp2_version.html).
    public static var nghttp2: String { String(cString: h2_nghttp2_version()) }

    /// The OpenSSL herald signs provider tokens and reads certificates with, "OpenSSL 3.0.19 27 Jan 2026"
    /// (https://docs.openssl.org/3.0/man3/OpenSSL_version/).
    public static var openSSL: String { String(cString: OpenSSL_version(OPENSSL_VERSION)) }

    private static var info: curl_version_info_data? { herald_curl_version_info()?.pointee }
}
