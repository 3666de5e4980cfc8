internal import CCurl
import Foundation
import HeraldCore

/// One plain HTTP request beside the campaign (a cron monitor's ping), made with libcurl's easy
/// interface on the caller's thread: a handful per run, so a handle each, set up and cleaned up
/// here. TLS peer verification is always on
/// (https://curl.se/libcurl/c/CURLOPT_SSL_VERIFYPEER.html). Proxies come from the environment as
/// libcurl reads them (https_proxy, no_proxy: https://curl.se/libcurl/c/CURLOPT_PROXY.html).
///
/// A URL may carry a secret in its path (a healthchecks.io check's UUID), so errors name the
/// host only, never the URL, and libcurl's message passes through `redaction` first.
public struct HTTPCall: Sendable {
    public var method: String
    public var url: String
    /// Header lines, `Name: value`.
    public var headers: [String]
    public var body: [UInt8]
    /// The whole request, connect included.
    public var timeoutSeconds: Double
    /// The TCP and TLS connect alone (nil: libcurl's default, bounded by `timeoutSeconds`).
    public var connectTimeoutSeconds: Double? = nil
    /// Which authorities to trust (TLS verification is always on).
    public var trust: TLSTrust = .system
    /// A TLS client certificate to present (APNs certificate authentication).
    public var identity: ClientIdentity? = nil
    /// The job's `apns.proxy` (a CONNECT tunnel); nil: libcurl's default, the environment's proxy.
    public var proxy: ProxySettings? = nil
    /// Header values that are credentials (`events.headers_env`): cut, with the URL's secrets
    /// and the proxy's password, out of anything the server or libcurl says (`redaction`).
    public var secretHeaderValues: [String] = []

    public init(method: String = "POST", url: String, headers: [String] = [], body: [UInt8] = [], timeoutSeconds: Double = 10) {
        self.method = method; self.url = url; self.headers = headers; self.body = body; self.timeoutSeconds = timeoutSeconds
    }

    /// The answer: its status, the first 64 KiB of its body, and its header fields (names
    /// lowercase; the last value of a repeated name).
    public struct Answer: Sendable, Equatable {
        public let status: Int
        public let body: [UInt8]
        public var headers: [String: String] = [:]
        public var isSuccess: Bool { (200..<300).contains(status) }
        public init(status: Int, body: [UInt8], headers: [String: String] = [:]) { self.status = status; self.body = body; self.headers = headers }
    }

    /// The request made up to `attempts` times, `pause` seconds apart, while no answer comes or
    /// the answer is a 5xx (a 4xx will not change on a second try); the last result.
    public func perform(attempts: Int, pause: TimeInterval = 1) -> Result<Answer, HTTPCallError> {
        var result = perform()
        for _ in 1..<max(1, attempts) {
            if case .success(let answer) = result, answer.status < 500 { break }
            Thread.sleep(forTimeInterval: pause)
            result = perform()
        }
        return result
    }

    /// The request made, or why no answer came.
    public func perform() -> Result<Answer, HTTPCallError> {
        guard let h = curl_easy_init() else { return .failure(.transport(host: host, code: -1, message: "out of memory")) }
        defer { curl_easy_cleanup(h) }
        return perform(on: h)
    }

    /// The host the URL names, for messages (the rest of a URL may be a secret).
    var host: String { URL(string: url)?.host ?? "the server" }

    /// What must not appear in a message about this request: apply it to any text the server
    /// sent (`SecretRedaction.excerpt` for a body).
    public var redaction: SecretRedaction {
        var secrets = secretHeaderValues
        if let proxy, let password = proxy.password { secrets += [password, "\(proxy.user ?? ""):\(password)"] }
        return SecretRedaction(headerValues: secrets, urls: [url] + (proxy?.url.map { [$0] } ?? []))
    }

    /// The request made on an easy handle set up from scratch (a new one, or one `curl_easy_reset`
    /// cleared: a reset "does not change the live connections", so a session's handle reuses its
    /// connection, https://curl.se/libcurl/c/curl_easy_reset.html).
    func perform(on h: UnsafeMutableRawPointer) -> Result<Answer, HTTPCallError> {
        let sink = UnsafeMutablePointer<[UInt8]>.allocate(capacity: 1)
        sink.initialize(to: [])
        defer { sink.deinitialize(count: 1); sink.deallocate() }
        let headerSink = UnsafeMutablePointer<[UInt8]>.allocate(capacity: 1)
        headerSink.initialize(to: [])
        defer { headerSink.deinitialize(count: 1); headerSink.deallocate() }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer { errorBuffer.deallocate() }
        var list: UnsafeMutablePointer<curl_slist>?
        defer { if let list { curl_slist_free_all(list) } }
        let code: CURLcode = body.withUnsafeBufferPointer { b in
            do throws(DeliveryError) {
                try curlCheck(herald_easy_setopt_cstr(h, CURLOPT_URL, url), "set URL")
                try curlCheck(herald_easy_setopt_cstr(h, CURLOPT_PROTOCOLS_STR, "http,https"), "allow http and https only")
                try curlCheck(herald_easy_setopt_long(h, CURLOPT_NOSIGNAL, 1), "set nosignal")
                try curlCheck(herald_easy_setopt_long(h, CURLOPT_SSL_VERIFYPEER, 1), "verify peer")
                try curlCheck(herald_easy_setopt_long(h, CURLOPT_SSL_VERIFYHOST, 2), "verify host")
                try curlCheck(herald_easy_setopt_long(h, CURLOPT_TIMEOUT_MS, max(1, Int(timeoutSeconds * 1000))), "set timeout")
                if let connect = connectTimeoutSeconds {
                    try curlCheck(herald_easy_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, max(1, Int(connect * 1000))), "set connect timeout")
                }
                try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer)), "set error buffer")
                try curlCheck(herald_easy_setopt_writefn(h, CURLOPT_WRITEFUNCTION, collectBody), "set write callback")
                try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_WRITEDATA, UnsafeMutableRawPointer(sink)), "set write data")
                try curlCheck(herald_easy_setopt_writefn(h, CURLOPT_HEADERFUNCTION, collectBody), "set header callback")
                try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_HEADERDATA, UnsafeMutableRawPointer(headerSink)), "set header data")
                try trust.apply(to: h)
                if let identity { try identity.apply(to: h) }
                if let proxy { try proxy.apply(to: h) }
                switch method {
                case "GET": try curlCheck(herald_easy_setopt_long(h, CURLOPT_HTTPGET, 1), "set GET")
                case "HEAD": try curlCheck(herald_easy_setopt_long(h, CURLOPT_NOBODY, 1), "set HEAD")
                default:
                    // libcurl copies the body (its size set first: it may hold NULs), and the empty
                    // "Expect:" below keeps it from waiting for a 100-continue before sending it.
                    try curlCheck(herald_easy_setopt_off(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(b.count)), "set body size")
                    let bytes = b.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) } ?? UnsafeMutableRawPointer(errorBuffer)
                    try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_COPYPOSTFIELDS, bytes), "set body")
                    if method != "POST" { try curlCheck(herald_easy_setopt_cstr(h, CURLOPT_CUSTOMREQUEST, method), "set method") }
                }
                list = try curlHeaderList(headers + ["Expect:"])
                try curlCheck(herald_easy_setopt_slist(h, CURLOPT_HTTPHEADER, list), "set headers")
            } catch {
                if case .curl(_, let c, _) = error { return CURLcode(rawValue: UInt32(max(0, c))) }
                return CURLE_FAILED_INIT
            }
            return curl_easy_perform(h)
        }
        guard code == CURLE_OK else {
            let detail = errorBuffer.pointee != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
            return .failure(.transport(host: host, code: Int(code.rawValue), message: redaction.apply(detail)))
        }
        var status = 0
        _ = herald_easy_getinfo_long(h, CURLINFO_RESPONSE_CODE, &status)
        return .success(Answer(status: status, body: sink.pointee, headers: Self.fields(headerSink.pointee)))
    }
}

extension HTTPCall {
    /// `Name: value` lines as libcurl hands them over (status lines and blank lines skipped).
    static func fields(_ bytes: [UInt8]) -> [String: String] {
        var out: [String: String] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == "\r\n" || $0 == "\n" || $0 == "\r" }) {
            guard let colon = line.firstIndex(of: ":"), !line.hasPrefix("HTTP/") else { continue }
            out[line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return out
    }
}

/// Why an `HTTPCall` got no answer: libcurl's code and message, with the host it was for.
public enum HTTPCallError: Error, Equatable, CustomStringConvertible {
    case transport(host: String, code: Int, message: String)

    public var description: String {
        switch self {
        case .transport(let host, let code, let message): return "no answer from \(host): \(message) (libcurl error \(code))"
        }
    }
}

private let collectBody: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { ptr, size, count, user in
    let n = size * count
    guard let ptr, let user else { return n }
    let sink = user.assumingMemoryBound(to: [UInt8].self)
    let room = 65_536 - sink.pointee.count
    if room > 0 {
        ptr.withMemoryRebound(to: UInt8.self, capacity: n) { sink.pointee.append(contentsOf: UnsafeBufferPointer(start: $0, count: min(n, room))) }
    }
    return n
}
