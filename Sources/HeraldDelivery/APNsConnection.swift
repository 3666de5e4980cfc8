internal import CCurl
import Foundation
import HeraldCore

/// Settings for one connection to APNs.
public struct ConnectionSettings: Sendable {
    /// `https://host[:port]`, no trailing slash.
    public var baseURL: String
    public var trust: TLSTrust
    /// A client certificate (certificate authentication); nil for provider tokens.
    public var identity: ClientIdentity?
    /// `apns.proxy`; nil leaves libcurl's default (https_proxy from the environment).
    public var proxy: ProxySettings?
    /// Requests in flight on this connection (HTTP/2 streams).
    public var maxStreams: Int
    public var connectTimeoutMs: Int
    /// One request, from leaving the queue to its answer: an answer that never comes (a server
    /// that swallowed the stream) ends as a transport failure, resent with the same apns-id.
    public var requestTimeoutMs: Int
    /// A connection with nothing in flight for this long is closed (and reopened when work comes).
    /// libcurl 7.88 cannot send an HTTP/2 PING on a connection driven by a multi handle (Apple
    /// asks for one after an hour of inactivity:
    /// https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns),
    /// so an idle connection is closed instead of kept alive; libcurl also refuses to reuse a
    /// connection idle that long (https://curl.se/libcurl/c/CURLOPT_MAXAGE_CONN.html).
    public var idleTimeoutMs: Int
    /// TCP keepalive probes after this many idle seconds (then every half of it): a connection a
    /// middlebox silently dropped is noticed by the kernel, not by a request timing out.
    public var keepAliveSeconds: Int
    /// A connection whose server has sent nothing for this long gets an HTTP/2 PING (nghttp2
    /// engine): `apns.ping_interval`. Why and how it fits `idleTimeoutMs`: docs/delivery.md,
    /// "Keepalive and idle close".
    public var pingIntervalMs = 60_000
    /// No ACK to that PING within this long: the connection is given up, its open streams come
    /// back as lost (resent with their apns-id) and the next work opens a new one (`apns.ping_timeout`).
    public var pingTimeoutMs = 15_000
    /// Tests only: false sends every request's APNs headers in libcurl's header list, the path
    /// taken where CCurlNghttp2 is not in effect.
    var requestFieldsToNghttp2 = true
    /// Tests only: the fields are handed to CCurlNghttp2 but it leaves them off, as when
    /// libcurl's calls do not reach it; the worker must notice and fall back.
    var withholdRequestFields = false
    /// Tests only: libcurl keeps making its own Host (:authority) and Content-Length, as another
    /// libcurl might; the fields must replace their values.
    var keepLibcurlsHostAndLength = false

    public init(baseURL: String, trust: TLSTrust, identity: ClientIdentity? = nil, maxStreams: Int = 100,
                connectTimeoutMs: Int = 10_000, requestTimeoutMs: Int = 30_000,
                idleTimeoutMs: Int = 600_000, keepAliveSeconds: Int = 60) {
        self.baseURL = baseURL; self.trust = trust; self.identity = identity; self.maxStreams = maxStreams
        self.connectTimeoutMs = connectTimeoutMs; self.requestTimeoutMs = requestTimeoutMs
        self.idleTimeoutMs = idleTimeoutMs; self.keepAliveSeconds = keepAliveSeconds
    }
}

/// One HTTP/2 connection driven by one libcurl multi handle, with a pool of reusable easy handles.
/// Used from one thread at a time (the sender gives each connection its own Dispatch queue).
public final class APNsConnection {
    let settings: ConnectionSettings
    private let multi: CurlMulti
    private var easies: [CurlEasy] = []
    private var free: [Int] = []

    public init(settings: ConnectionSettings) throws(DeliveryError) {
        self.settings = settings
        self.multi = try CurlMulti(maxStreams: settings.maxStreams)
    }

    private func easy() throws(DeliveryError) -> Int {
        if let i = free.popLast() { return i }
        let slot = easies.count
        easies.append(try CurlEasy(slot: slot, tls: settings.trust, identity: settings.identity, proxy: settings.proxy, connectTimeoutMs: settings.connectTimeoutMs,
                                   requestTimeoutMs: settings.requestTimeoutMs))
        return slot
    }

    /// Sends every request, up to `maxStreams` at once, and returns one result per request.
    /// `authorization` is the provider token (nil for certificate auth); it goes only into the
    /// request header, never into an error or a log.
    public func send(_ requests: [PushRequest], authorization: String?) throws(DeliveryError) -> [PushResult] {
        let auth = authorization.map { "authorization: bearer \($0)" }
        return try transfer(count: requests.count) { (e: CurlEasy, i: Int) throws(DeliveryError) in
            let r = requests[i]
            try e.prepare(url: settings.baseURL + PushRequest.devicePathPrefix + r.token.hex, payload: r.payload, headerLines: headerLines(r, auth))
        }
    }

    /// Runs `count` transfers, up to `maxStreams` at once; `prepare` points an easy handle at
    /// transfer `i`. `send` is its only production caller; simulator tests use it to send requests
    /// no PushRequest can express (another method, repeated or unknown headers).
    func transfer(count: Int, prepare: (CurlEasy, Int) throws(DeliveryError) -> Void) throws(DeliveryError) -> [PushResult] {
        var results: [PushResult] = []
        results.reserveCapacity(count)
        var next = 0
        var active = 0
        while next < count || active > 0 {
            while active < settings.maxStreams && next < count {
                let slot = try easy()
                let e = easies[slot]
                try prepare(e, next)
                e.requestIndex = next
                e.startedAt = DispatchTime.now().uptimeNanoseconds
                try curlCheck(curl_multi_add_handle(multi.handle, e.handle), "add request")
                next += 1
                active += 1
            }
            var running: Int32 = 0
            try curlCheck(curl_multi_perform(multi.handle, &running), "perform transfers")
            var left: Int32 = 0
            while let msg = curl_multi_info_read(multi.handle, &left) {
                guard msg.pointee.msg == CURLMSG_DONE, let h = msg.pointee.easy_handle else { continue }
                let code = msg.pointee.data.result
                var priv: UnsafeMutableRawPointer?
                _ = herald_easy_getinfo_ptr(h, CURLINFO_PRIVATE, &priv)
                let slot = Int(bitPattern: priv) - 1
                let e = easies[slot]
                results.append(result(for: e, code: code))
                _ = curl_multi_remove_handle(multi.handle, h)
                free.append(slot)
                active -= 1
            }
            if active > 0 {
                try curlCheck(curl_multi_poll(multi.handle, nil, 0, 100, nil), "wait for the network")
            }
        }
        return results
    }

    private func headerLines(_ r: PushRequest, _ auth: String?) -> [String] {
        var lines: [String] = []
        lines.reserveCapacity(9)
        if let auth { lines.append(auth) }
        lines.append("apns-topic: \(r.topic)")
        lines.append("apns-push-type: \(r.pushType.rawValue)")
        lines.append("apns-priority: \(r.priority)")
        lines.append("apns-id: \(r.apnsId)")
        if let c = r.collapseId { lines.append("apns-collapse-id: \(c)") }
        if let x = r.expiration { lines.append("apns-expiration: \(x)") }
        lines += CurlEasy.suppressedDefaultHeaders
        return lines
    }

    private func result(for e: CurlEasy, code: CURLcode) -> PushResult {
        let latency = Int((DispatchTime.now().uptimeNanoseconds - e.startedAt) / 1_000_000)
        let version = e.httpVersion
        guard code == CURLE_OK else {
            var text = e.errorText
            if text.isEmpty { text = String(cString: curl_easy_strerror(code)) }
            return PushResult(index: e.requestIndex, outcome: .transportFailure("curl error \(code.rawValue): \(text)"),
                              latencyMs: latency, httpVersion: version)
        }
        let apnsId = e.buffers.pointee.apnsId.isEmpty ? nil : String(decoding: e.buffers.pointee.apnsId, as: UTF8.self)
        let outcome = ResponseBody.outcome(status: e.responseCode, apnsId: apnsId) { e.buffers.pointee.body }
        let uniqueId = e.buffers.pointee.apnsUniqueId.isEmpty ? nil : String(decoding: e.buffers.pointee.apnsUniqueId, as: UTF8.self)
        var result = PushResult(index: e.requestIndex, outcome: outcome, latencyMs: latency, httpVersion: version)
        result.apnsUniqueId = uniqueId
        return result
    }
}

/// APNs error bodies: `{"reason":"…"}`, plus `"timestamp"` (ms) on 410.
enum ResponseBody {
    struct Parsed: Decodable { var reason: String?; var timestamp: Int64? }
    static func parse(_ bytes: [UInt8]) -> Parsed? {
        guard !bytes.isEmpty else { return nil }
        return try? JSONDecoder().decode(Parsed.self, from: Data(bytes))
    }

    /// An answer as every sender records it: the status and apns-id, and for anything but 200 the
    /// reason and timestamp its body carries (a 200's body is not read).
    static func outcome(status: Int, apnsId: String?, body: () -> [UInt8]) -> PushOutcome {
        let parsed = status == 200 ? nil : parse(body())
        return .answered(status: status, apnsId: apnsId, reason: parsed?.reason.map { APNsReason($0) }, timestamp: parsed?.timestamp)
    }
}
