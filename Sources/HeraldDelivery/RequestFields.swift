internal import CCurlNghttp2
import HeraldCore

/// The APNs header fields of one streaming slot's requests, ready for nghttp2, which
/// CCurlNghttp2 appends to the request libcurl submits. libcurl's own header list formats
/// each byte through its printf engine and parses the result back; these are copied once by
/// nghttp2 instead.
///
/// Per request only :path, content-length and the apns-id change: each has its own buffer, every
/// other field is laid out again only when the request's other headers or the JWT change.
/// :authority and content-length replace libcurl's Host and Content-Length (`clearedByFields`),
/// each an aprintf per request in libcurl 7.88. :path replaces libcurl's, which stays the bare
/// "/3/device/": libcurl parses, assembles and prints its URL byte by byte on every request.
final class RequestFields {
    /// Whether libcurl's nghttp2_submit_request calls reach CCurlNghttp2 in this process.
    static let inEffect = herald_request_headers_in_effect() == 1

    /// :authority, :path, content-length, apns-id, apns-topic, apns-push-type, apns-priority,
    /// apns-collapse-id, apns-expiration, authorization.
    private static let maxFields = 10
    /// Where the per-request values sit in `nv`; the fields before `apnsIdField` replace libcurl's of that name.
    private static let pathField = 1, lengthField = 2, apnsIdField = 3
    /// "/3/device/" and the longest token's hex.
    private static let pathCapacity = PushRequest.devicePathPrefix.utf8.count + 2 * DeviceToken.maximumBytes

    /// Header lines that keep libcurl from making the fields this type makes itself.
    static let clearedByFields = ["Host:", "Content-Length:"]

    private let registered: UnsafeMutablePointer<herald_request_headers>
    private let nv: UnsafeMutablePointer<herald_nv>
    private var bytes: UnsafeMutablePointer<UInt8>
    /// Sized by the first layout (about 500 bytes with a JWT), grown when a later one needs more:
    /// a slot per request in flight holds one.
    private var capacity = 0
    private var id: UnsafeMutablePointer<UInt8>
    private var idCapacity = 64
    private var key: StreamSlot.HeaderKey?
    private let authority: String
    private let length: UnsafeMutablePointer<UInt8>
    private let path: UnsafeMutablePointer<UInt8>
    private var lengthDigits: [UInt8] = []

    /// `authority` is the endpoint's `host[:port]`, as libcurl's Host header would give it.
    init(easy: UnsafeMutableRawPointer, authority: String) {
        self.authority = authority
        length = .allocate(capacity: 20)
        let path = UnsafeMutablePointer<UInt8>.allocate(capacity: Self.pathCapacity)
        var prefix = PushRequest.devicePathPrefix
        prefix.withUTF8 { path.update(from: $0.baseAddress!, count: $0.count) }
        self.path = path
        nv = .allocate(capacity: Self.maxFields)
        bytes = .allocate(capacity: capacity)
        id = .allocate(capacity: idCapacity)
        registered = .allocate(capacity: 1)
        registered.initialize(to: herald_request_headers())
        registered.pointee.easy = easy
        registered.pointee.nv = nv
        registered.pointee.replacing = Self.apnsIdField
        herald_request_headers_register(registered)
    }

    deinit {
        herald_request_headers_unregister(registered)
        registered.deallocate()
        nv.deallocate()
        bytes.deallocate()
        id.deallocate()
        length.deallocate()
        path.deallocate()
    }

    /// Sets the fields of `r`'s request, to go out with the handle's next transfer, and its body
    /// (`r.payload`'s bytes at `body`, unchanged until the next request is prepared).
    func prepare(_ r: PushRequest, key: StreamSlot.HeaderKey, jwt: String?, body: UnsafePointer<UInt8>) {
        if key != self.key || registered.pointee.count == 0 { layOut(r, jwt: jwt) }
        var apnsId = r.apnsId
        apnsId.withUTF8 { u in
            if u.count > idCapacity {
                id.deallocate()
                idCapacity = u.count
                id = .allocate(capacity: idCapacity)
            }
            id.update(from: u.baseAddress!, count: u.count)
            nv[Self.apnsIdField].value = id
            nv[Self.apnsIdField].valuelen = u.count
        }
        let prefixCount = PushRequest.devicePathPrefix.utf8.count
        var hex = r.token.hex
        hex.withUTF8 { u in (path + prefixCount).update(from: u.baseAddress!, count: min(u.count, Self.pathCapacity - prefixCount)) }
        nv[Self.pathField].value = path
        nv[Self.pathField].valuelen = min(prefixCount + hex.utf8.count, Self.pathCapacity)
        lengthDigits.removeAll(keepingCapacity: true)
        DecimalDigits.append(r.payload.count, to: &lengthDigits)
        length.update(from: lengthDigits, count: lengthDigits.count)
        nv[Self.lengthField].value = length
        nv[Self.lengthField].valuelen = lengthDigits.count
        self.key = key
        registered.pointee.body = body
        registered.pointee.body_length = r.payload.count
        forgetAnswer()
        registered.pointee.pending = 1
    }

    /// Takes the fields off the handle: its requests go out with libcurl's header list.
    func clear() {
        registered.pointee.count = 0
        registered.pointee.pending = 0
        registered.pointee.body = nil
        forgetAnswer()
        key = nil
    }

    /// No answer ids until the next request's answer brings them (a request on the header-list
    /// path must not report an earlier one's).
    private func forgetAnswer() {
        registered.pointee.answer_apns_id_length = 0
        registered.pointee.answer_unique_id_length = 0
    }

    /// Calls `body` with the apns-id of the answer to the request prepared last, as taken from
    /// nghttp2 before libcurl saw it (CCurlNghttp2's response_headers.c); nil when none was taken.
    func withAnswerApnsId<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R? {
        let count = registered.pointee.answer_apns_id_length
        guard count > 0 else { return nil }
        return withUnsafeBytes(of: &registered.pointee.answer_apns_id) { body(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
    }

    /// The answer's apns-unique-id, likewise.
    func withAnswerUniqueId<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R? {
        let count = registered.pointee.answer_unique_id_length
        guard count > 0 else { return nil }
        return withUnsafeBytes(of: &registered.pointee.answer_unique_id) { body(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
    }

    /// False while the request prepared last has not been handed to nghttp2 with these fields.
    var wentOut: Bool { registered.pointee.pending == 0 }

    /// Tests only: the next requests go out without the fields, as when libcurl's calls do not reach CCurlNghttp2.
    var withheld: Bool {
        get { registered.pointee.withheld != 0 }
        set { registered.pointee.withheld = newValue ? 1 : 0 }
    }

    /// The laid-out fields' names, each with whether it goes out never indexed (for tests).
    var fieldNames: [(name: String, neverIndexed: Bool)] {
        (0..<registered.pointee.count).map { i in
            (String(decoding: UnsafeBufferPointer(start: nv[i].name, count: nv[i].namelen), as: UTF8.self),
             nv[i].flags & UInt8(HERALD_NV_NO_INDEX) != 0)
        }
    }

    private func layOut(_ r: PushRequest, jwt: String?) {
        var fields: [(String, String)] = [(":authority", authority), (":path", ""), ("content-length", ""), ("apns-id", ""), ("apns-topic", r.topic), ("apns-push-type", r.pushType.rawValue),
                                          ("apns-priority", String(r.priority))]
        if let c = r.collapseId { fields.append(("apns-collapse-id", c)) }
        if let x = r.expiration { fields.append(("apns-expiration", String(x))) }
        if let jwt { fields.append(("authorization", "bearer " + jwt)) }
        let needed = fields.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count }
        if needed > capacity {
            bytes.deallocate()
            capacity = needed
            bytes = .allocate(capacity: capacity)
        }
        var at = 0
        func put(_ s: String) -> (UnsafeMutablePointer<UInt8>, Int) {
            let start = bytes + at
            var s = s
            s.withUTF8 { u in if let base = u.baseAddress { start.update(from: base, count: u.count) } }
            at += s.utf8.count
            return (start, s.utf8.count)
        }
        for (i, (name, value)) in fields.enumerated() {
            let n = put(name), v = put(value)
            // A new apns-id on every request: added to HPACK's dynamic table, it would only push out
            // the fields requests share (nghttp2 already leaves :path and authorization out).
            let flags = i == Self.apnsIdField ? UInt8(HERALD_NV_NO_INDEX) : 0
            nv[i] = herald_nv(name: n.0, value: v.0, namelen: n.1, valuelen: v.1, flags: flags)
        }
        registered.pointee.count = fields.count
    }
}
