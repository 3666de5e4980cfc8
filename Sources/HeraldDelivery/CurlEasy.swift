internal import CCurl
import Foundation

/// What libcurl's callbacks write into for one in-flight request. Manually allocated and handed to
/// the C callbacks as a raw pointer, so a callback (one per header line and body chunk) does no
/// `Unmanaged` retain/release and builds no String.
struct TransferBuffers {
    var body: [UInt8] = []
    var apnsId: [UInt8] = []
    /// `apns-unique-id` (development environment only), for delivery-log lookups in Apple's console.
    var apnsUniqueId: [UInt8] = []
    /// The socket of a connection this handle opened, until the owner takes it (not reset
    /// per request: the connect happens during the transfer).
    var openedSocket: Int32 = -1

    mutating func reset() {
        body.removeAll(keepingCapacity: true); apnsId.removeAll(keepingCapacity: true); apnsUniqueId.removeAll(keepingCapacity: true)
    }
}

/// One reusable easy handle with its buffers and header list. Set up once; per request only the URL,
/// the body and the per-request headers change.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    let buffers: UnsafeMutablePointer<TransferBuffers>
    let errorBuffer: UnsafeMutablePointer<CChar>
    /// The request header list, owned here until the next request replaces it.
    var headers: UnsafeMutablePointer<curl_slist>?
    var startedAt: UInt64 = 0
    var requestIndex = -1

    /// Header lines that keep libcurl's defaults off a request, so only Apple's headers go out:
    /// Content-Type (libcurl labels a POST form-urlencoded; APNs reads the body as JSON whatever
    /// it says), "Expect: 100-continue" (added to larger bodies) and Accept. Every header byte
    /// costs as well: libcurl 7.88 formats the request text a byte at a time.
    static let suppressedDefaultHeaders = ["Content-Type:", "Expect:", "Accept:"]

    /// True while a method other than POST is set (tests of the simulator's 405).
    private var customMethod = false

    init(slot: Int, tls: TLSTrust, identity: ClientIdentity? = nil, proxy: ProxySettings? = nil, connectTimeoutMs: Int, requestTimeoutMs: Int) throws(DeliveryError) {
        guard let h = curl_easy_init() else { throw .curl(operation: "curl_easy_init", code: -1, message: "out of memory") }
        handle = h
        buffers = .allocate(capacity: 1)
        buffers.initialize(to: TransferBuffers())
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)), "set HTTP/2")
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_PIPEWAIT, 1), "set pipewait")
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_NOSIGNAL, 1), "set nosignal")
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_TCP_NODELAY, 1), "set TCP_NODELAY")
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_TCP_KEEPALIVE, 1), "set TCP keepalive")
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2)), "require TLS 1.2+")
        // Peer verification is always on: trust is extended with a CA, never by turning it off.
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_SSL_VERIFYPEER, 1), "verify peer")
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_SSL_VERIFYHOST, 2), "verify host")
        try tls.apply(to: h)
        try identity?.apply(to: h)
        try ProxySettings.apply(proxy, to: h)
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, connectTimeoutMs), "set connect timeout")
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_TIMEOUT_MS, requestTimeoutMs), "set request timeout")
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_POST, 1), "set POST")
        try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_ERRORBUFFER, errorBuffer), "set error buffer")
        try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_PRIVATE, UnsafeMutableRawPointer(bitPattern: slot + 1)), "set private")
        try curlCheck(herald_easy_setopt_writefn(h, CURLOPT_WRITEFUNCTION, curlBodyCallback), "set write callback")
        try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_WRITEDATA, UnsafeMutableRawPointer(buffers)), "set write data")
        try curlCheck(herald_easy_setopt_writefn(h, CURLOPT_HEADERFUNCTION, curlHeaderCallback), "set header callback")
        try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_HEADERDATA, UnsafeMutableRawPointer(buffers)), "set header data")
        try curlCheck(herald_easy_setopt_sockoptfn(h, CURLOPT_SOCKOPTFUNCTION, curlSocketCallback), "set socket callback")
        try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_SOCKOPTDATA, UnsafeMutableRawPointer(buffers)), "set socket data")
    }

    /// The socket of the connection this handle's last transfer opened, once (-1: none since
    /// the last call). An HTTP/2 connection is opened by one transfer and used by many, and
    /// libcurl 7.88 cannot tell a multi handle's socket otherwise (CURLINFO_ACTIVESOCKET answers
    /// only once the connection is idle).
    func takeOpenedSocket() -> Int32 {
        let fd = buffers.pointee.openedSocket
        if fd >= 0 { buffers.pointee.openedSocket = -1 }
        return fd
    }

    deinit {
        curl_easy_cleanup(handle)
        if let headers { curl_slist_free_all(headers) }
        buffers.deinitialize(count: 1)
        buffers.deallocate()
        errorBuffer.deallocate()
    }

    /// Points the handle at one request. The body is copied by libcurl (COPYPOSTFIELDS), so the
    /// caller's array need not outlive the transfer.
    /// `method` replaces POST (CURLOPT_CUSTOMREQUEST); only tests send anything else.
    func prepare(url: String, payload: [UInt8], headerLines: [String], method: String? = nil) throws(DeliveryError) {
        if let method {
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_CUSTOMREQUEST, method), "set method")
            customMethod = true
        } else if customMethod {
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_CUSTOMREQUEST, nil), "reset method")
            customMethod = false
        }
        buffers.pointee.reset()
        errorBuffer[0] = 0
        if let headers { curl_slist_free_all(headers) }
        headers = nil
        let list = try curlHeaderList(headerLines)
        headers = list
        try curlCheck(herald_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, list), "set headers")
        try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_URL, url), "set URL")
        try curlCheck(herald_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(payload.count)), "set body size")
        let code = payload.withUnsafeBufferPointer { buf in
            herald_easy_setopt_ptr(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: buf.baseAddress))
        }
        try curlCheck(code, "set body")
    }

    var responseCode: Int {
        var code = 0
        _ = herald_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &code)
        return code
    }

    var httpVersion: Int {
        var v = 0
        _ = herald_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &v)
        switch v {
        case Int(CURL_HTTP_VERSION_2_0): return 20
        case Int(CURL_HTTP_VERSION_1_1): return 11
        case Int(CURL_HTTP_VERSION_1_0): return 10
        default: return v
        }
    }

    var errorText: String {
        let s = String(cString: errorBuffer)
        return s
    }
}

/// Notes the socket of each connection a handle opens (`takeOpenedSocket`), for `TCPCork`.
private let curlSocketCallback: @convention(c) (UnsafeMutableRawPointer?, curl_socket_t, curlsocktype) -> Int32 = { user, fd, purpose in
    if purpose == CURLSOCKTYPE_IPCXN, let user {
        user.assumingMemoryBound(to: TransferBuffers.self).pointee.openedSocket = fd
    }
    return CURL_SOCKOPT_OK
}

/// Response body: kept up to 8 KiB (APNs error bodies are tiny; anything larger is not APNs).
private let curlBodyCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { ptr, size, count, user in
    let n = size * count
    guard let ptr, let user else { return n }
    let buffers = user.assumingMemoryBound(to: TransferBuffers.self)
    if buffers.pointee.body.count < 8192 {
        ptr.withMemoryRebound(to: UInt8.self, capacity: n) { p in
            buffers.pointee.body.append(contentsOf: UnsafeBufferPointer(start: p, count: min(n, 8192 - buffers.pointee.body.count)))
        }
    }
    return n
}

/// Response headers, parsed as bytes (in Swift "\r\n" is one Character, so text trimming keeps the \r).
private let curlHeaderCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { ptr, size, count, user in
    let n = size * count
    guard let ptr, let user else { return n }
    ptr.withMemoryRebound(to: UInt8.self, capacity: n) { p in
        let buffers = user.assumingMemoryBound(to: TransferBuffers.self)
        if let value = headerValue(p, n, apnsIdName) { buffers.pointee.apnsId = value }
        else if let value = headerValue(p, n, apnsUniqueIdName) { buffers.pointee.apnsUniqueId = value }
    }
    return n
}

private let apnsIdName: [UInt8] = Array("apns-id:".utf8)
private let apnsUniqueIdName: [UInt8] = Array("apns-unique-id:".utf8)

/// The value of header line `p[0..<n]` if its name (lower case, with the colon) is `name`.
private func headerValue(_ p: UnsafeMutablePointer<UInt8>, _ n: Int, _ name: [UInt8]) -> [UInt8]? {
    guard n > name.count else { return nil }
    for i in 0..<name.count {
        var b = p[i]
        if b >= 0x41 && b <= 0x5A { b += 32 }
        if b != name[i] { return nil }
    }
    var start = name.count
    var end = n
    while start < end, p[start] == 0x20 || p[start] == 0x09 { start += 1 }
    while end > start, p[end - 1] == 0x0D || p[end - 1] == 0x0A || p[end - 1] == 0x20 { end -= 1 }
    return Array(UnsafeBufferPointer(start: p + start, count: end - start))
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
