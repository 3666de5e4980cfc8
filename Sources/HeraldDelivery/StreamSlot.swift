internal import CCurl
import Foundation
import HeraldCore

/// One reusable easy handle of a streaming connection, with what its next request needs kept
/// between requests: per request only the URL, the body size and the apns-id bytes change. The
/// handle is set up once and its header list rebuilt only when the JWT or a header other than
/// apns-id changes: a new list or handle per request is CPU spent again on every push.
final class StreamSlot {
    let easy: CurlEasy
    let slot: Int
    var job: PushJob?
    /// The JWT this request carries (to invalidate exactly it on ExpiredProviderToken).
    var jwt: String?
    /// The connection (multi handle) the request was added to.
    var connection: StreamConnection?
    var startedAt: UInt64 = 0

    /// The header fields handed to nghttp2 directly (`RequestFields`), or nil where libcurl's
    /// nghttp2 calls do not reach CCurlNghttp2.
    private let fields: RequestFields?
    /// What the header list clears while `fields` carries Apple's headers (tests keep it empty).
    private let fieldsClearLibcurls: [String]
    /// Whether the request prepared last carries its fields in `fields` (else in `list`).
    private(set) var sentWithFields = false
    private var list: UnsafeMutablePointer<curl_slist>?
    /// What `list` holds: nil while `fields` carries Apple's headers (the list then only clears
    /// libcurl's defaults, Host and Content-Length included).
    private var listKey: HeaderKey?
    private var apnsIdLength = -1
    private var body: UnsafeMutablePointer<UInt8>
    private var bodyCapacity: Int
    /// Whether libcurl is set up to send `body` itself (a POST with CURLOPT_POSTFIELDS) or to send
    /// a bodiless request whose method is POST while nghttp2 takes the body from `fields`.
    private var libcurlSendsBody = true
    /// The request URL, parsed once (CURLOPT_CURLU): per request only its path is replaced.
    /// Given a URL string, libcurl parses it and assembles it again on every request
    /// (curl_url_set, curl_url_get, aprintf), work repeated on the connection thread for every push.
    private let url: OpaquePointer
    private var urlBase: String?
    /// Whether the URL handle's path is the bare device prefix (see `setURL`).
    private var urlHasPrefixOnly = false
    /// "/3/device/<hex>" and a NUL, rewritten in place per request.
    private var path: [UInt8]

    /// Everything in the header list except the apns-id, which is patched in place.
    struct HeaderKey: Equatable {
        var generation: Int
        var topic: String
        var pushType: PushType
        var priority: Int
        var collapseId: String?
        var expiration: Int?
    }

    init(slot: Int, settings: ConnectionSettings) throws(DeliveryError) {
        self.slot = slot
        easy = try CurlEasy(slot: slot, tls: settings.trust, identity: settings.identity, proxy: settings.proxy, connectTimeoutMs: settings.connectTimeoutMs,
                            requestTimeoutMs: settings.requestTimeoutMs)
        let h = easy.handle
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_TCP_KEEPIDLE, max(1, settings.keepAliveSeconds)), "set TCP keepalive idle")
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_TCP_KEEPINTVL, max(1, settings.keepAliveSeconds / 2)), "set TCP keepalive interval")
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_MAXAGE_CONN, max(1, settings.idleTimeoutMs / 1000)), "set idle connection age")
        // Every slot is a request in flight, so what a slot holds is multiplied by the window
        // (thousands of streams at Apple's latency). APNs answers are a few hundred bytes: the
        // smallest receive buffer libcurl takes (https://curl.se/libcurl/c/CURLOPT_BUFFERSIZE.html,
        // "The minimum buffer size allowed to be set is 1024") holds one. A request whose body
        // libcurl uploads itself gets an upload buffer, kept by the handle until it is cleaned up,
        // of at least 16 KiB (https://curl.se/libcurl/c/CURLOPT_UPLOAD_BUFFERSIZE.html, "The minimum
        // buffer size allowed to be set is 16 kilobytes"): where nghttp2 takes the body from
        // `fields`, libcurl sends a request without a body and never allocates one (`prepare`).
        // The body buffer grows to the largest payload the slot has carried (a typical payload is a
        // few hundred bytes), in steps of 64 bytes.
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_BUFFERSIZE, 1024), "set receive buffer size")
        try curlCheck(herald_easy_setopt_long(h, CURLOPT_UPLOAD_BUFFERSIZE, 16_384), "set send buffer size")
        bodyCapacity = 0
        body = .allocate(capacity: bodyCapacity)
        guard let u = curl_url() else { throw .curl(operation: "curl_url", code: -1, message: "out of memory") }
        url = u
        path = Array(Self.pathPrefix)
        try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(body)), "set body")
        try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_CURLU, UnsafeMutableRawPointer(u)), "set URL handle")
        fields = RequestFields.inEffect ? RequestFields(easy: h, authority: Self.authority(of: settings.baseURL)) : nil
        if settings.withholdRequestFields { fields?.withheld = true }
        fieldsClearLibcurls = settings.keepLibcurlsHostAndLength ? [] : RequestFields.clearedByFields
    }

    deinit {
        if let list { curl_slist_free_all(list) }
        body.deallocate()
        // The easy handle outlives this body (it is cleaned up with `easy`): detach the URL handle
        // first. A transfer in flight has its own copy (libcurl duplicates it when the transfer starts).
        _ = herald_easy_setopt_ptr(easy.handle, CURLOPT_CURLU, nil)
        curl_url_cleanup(url)
    }

    private static let pathPrefix = Array(PushRequest.devicePathPrefix.utf8)

    /// Points the URL handle at baseURL's origin (once per base) and at `token`'s device path, or
    /// with nil at the bare device prefix, left alone from one request to the next: then the
    /// fields carry the real :path, and libcurl parses, assembles and prints a short URL.
    private func setURL(baseURL: String, token: DeviceToken?) throws(DeliveryError) {
        if baseURL != urlBase {
            try curlCheck(curl_url_set(url, CURLUPART_URL, baseURL + "/", 0), "set URL")
            urlBase = baseURL
            urlHasPrefixOnly = false
        }
        if token == nil && urlHasPrefixOnly { return }
        path.removeSubrange(Self.pathPrefix.count...)
        if let token { path.append(contentsOf: token.hex.utf8) }
        path.append(0)
        let code = path.withUnsafeBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { curl_url_set(url, CURLUPART_PATH, $0.baseAddress, 0) }
        }
        try curlCheck(code, "set URL path")
        urlHasPrefixOnly = token == nil
    }

    /// Points the handle at `job`, carrying `jwt` (token authentication) as its authorization.
    /// `generation` changes whenever the JWT does. With `fieldsToNghttp2` the APNs headers go to
    /// nghttp2 directly (`RequestFields`), else in libcurl's header list.
    func prepare(_ job: PushJob, baseURL: String, jwt: String?, generation: Int, fieldsToNghttp2: Bool) throws(DeliveryError) {
        let r = job.request
        let h = easy.handle
        easy.buffers.pointee.reset()
        easy.errorBuffer[0] = 0
        let key = HeaderKey(generation: generation, topic: r.topic, pushType: r.pushType, priority: r.priority,
                            collapseId: r.collapseId, expiration: r.expiration)
        if r.payload.count > bodyCapacity {
            body.deallocate()
            bodyCapacity = (r.payload.count + 63) & ~63
            body = .allocate(capacity: bodyCapacity)
            if libcurlSendsBody {
                try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(body)), "set body")
            }
        }
        r.payload.withUnsafeBufferPointer { p in
            if let base = p.baseAddress { body.update(from: base, count: p.count) }
        }
        if fieldsToNghttp2, let fields {
            if list == nil || listKey != nil {
                try setList(CurlEasy.suppressedDefaultHeaders + fieldsClearLibcurls, key: nil, apnsId: nil)
            }
            // nghttp2 takes the body from the fields' registration, right behind the HEADERS
            // frame; to libcurl the request is a POST without a body (CURLOPT_HTTPGET, then
            // CURLOPT_CUSTOMREQUEST "POST": https://curl.se/libcurl/c/CURLOPT_CUSTOMREQUEST.html),
            // so it runs no upload of its own and allocates no upload buffer for this handle.
            fields.prepare(r, key: key, jwt: jwt, body: body)
            if libcurlSendsBody {
                try curlCheck(herald_easy_setopt_long(h, CURLOPT_HTTPGET, 1), "set bodiless request")
                try curlCheck(herald_easy_setopt_cstr(h, CURLOPT_CUSTOMREQUEST, "POST"), "set request method")
                libcurlSendsBody = false
            }
            try setURL(baseURL: baseURL, token: nil)
            sentWithFields = true
        } else {
            fields?.clear()
            sentWithFields = false
            let idCount = r.apnsId.utf8.count
            if key != listKey || idCount != apnsIdLength || list == nil {
                try rebuildHeaders(r, key: key, jwt: jwt)
            } else if let data = list?.pointee.data {
                // The first node is "apns-id: <id>", same length: overwrite the id in place.
                var id = r.apnsId
                id.withUTF8 { u in UnsafeMutableRawPointer(data + 9).copyMemory(from: u.baseAddress!, byteCount: u.count) }
            }
            if !libcurlSendsBody {
                try curlCheck(herald_easy_setopt_cstr(h, CURLOPT_CUSTOMREQUEST, nil), "set request method")
                try curlCheck(herald_easy_setopt_ptr(h, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(body)), "set body")
                libcurlSendsBody = true
            }
            try curlCheck(herald_easy_setopt_off(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(r.payload.count)), "set body size")
            try setURL(baseURL: baseURL, token: r.token)
        }
        self.job = job
    }

    private func rebuildHeaders(_ r: PushRequest, key: HeaderKey, jwt: String?) throws(DeliveryError) {
        var lines = ["apns-id: \(r.apnsId)"]
        lines.reserveCapacity(10)
        lines.append("apns-topic: \(r.topic)")
        lines.append("apns-push-type: \(r.pushType.rawValue)")
        lines.append("apns-priority: \(r.priority)")
        if let c = r.collapseId { lines.append("apns-collapse-id: \(c)") }
        if let x = r.expiration { lines.append("apns-expiration: \(x)") }
        if let jwt { lines.append("authorization: bearer \(jwt)") }
        lines += CurlEasy.suppressedDefaultHeaders
        try setList(lines, key: key, apnsId: r.apnsId)
    }

    private func setList(_ lines: [String], key: HeaderKey?, apnsId: String?) throws(DeliveryError) {
        let new = try curlHeaderList(lines)
        try curlCheck(herald_easy_setopt_slist(easy.handle, CURLOPT_HTTPHEADER, new), "set headers")
        if let list { curl_slist_free_all(list) }
        list = new
        listKey = key
        apnsIdLength = apnsId?.utf8.count ?? -1
    }

    /// `host[:port]` of `https://host[:port]`, the port left out when it is 443, as libcurl writes Host.
    static func authority(of baseURL: String) -> String {
        var rest = Substring(baseURL)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        if rest.hasSuffix(":443") { rest = rest.dropLast(4) }
        return String(rest)
    }

    /// True when the request prepared last was answered without its APNs header fields having
    /// been handed to nghttp2: libcurl's calls did not reach CCurlNghttp2 after all.
    var fieldsMissed: Bool { sentWithFields && !(fields?.wentOut ?? true) }

    /// The answer's `apns-unique-id` header, when APNs sent one (development only).
    var apnsUniqueId: String? {
        if let id = fields?.withAnswerUniqueId({ String(decoding: $0, as: UTF8.self) }) { return id }
        let b = easy.buffers.pointee
        return b.apnsUniqueId.isEmpty ? nil : String(decoding: b.apnsUniqueId, as: UTF8.self)
    }

    /// The answer's apns-id: the request's own string when it is the usual echo (no new string
    /// per answer). From the fields' registration, or where it did not take it, from libcurl's
    /// header callback.
    private var answerApnsId: String? {
        let sent = job?.request.apnsId
        func read(_ id: UnsafeRawBufferPointer) -> String? {
            if id.isEmpty { return nil }
            if let sent, id.elementsEqual(sent.utf8) { return sent }
            return String(decoding: id, as: UTF8.self)
        }
        if let fields, let id = fields.withAnswerApnsId(read) { return id }
        return easy.buffers.pointee.apnsId.withUnsafeBytes(read)
    }

    /// The request's outcome once libcurl reports it done.
    func outcome(code: CURLcode) -> PushOutcome {
        guard code == CURLE_OK else {
            var text = easy.errorText
            if text.isEmpty { text = String(cString: curl_easy_strerror(code)) }
            return .transportFailure("curl error \(code.rawValue): \(text)")
        }
        return ResponseBody.outcome(status: easy.responseCode, apnsId: answerApnsId) { easy.buffers.pointee.body }
    }

    /// New connections libcurl opened for this transfer (reconnects included).
    var connectsMade: Int {
        var n = 0
        _ = herald_easy_getinfo_long(easy.handle, CURLINFO_NUM_CONNECTS, &n)
        return n
    }

    /// Errors that mean the connection could not be made at all (as opposed to one that died):
    /// these back off before reconnecting.
    static func isConnectFailure(_ code: CURLcode) -> Bool {
        [CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION,
         CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE].contains(code)
    }
}

/// One libcurl multi handle, i.e. one HTTP/2 connection (MAX_HOST_CONNECTIONS = 1), with the
/// provider token it has used: "APNs report an error if you use a new token more than once every
/// 20 minutes on the same connection" (https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns).
final class StreamConnection {
    let multi: CurlMulti
    var active = 0
    /// Its TCP socket, corked while libcurl writes a turn's requests (`TCPCork`); -1 until the
    /// request that opened the connection is done (`CurlEasy.takeOpenedSocket`).
    var socket: Int32 = -1
    var jwt: String?
    var jwtAdoptedAt: Date?

    init(maxStreams: Int) throws(DeliveryError) { multi = try CurlMulti(maxStreams: maxStreams) }
}
