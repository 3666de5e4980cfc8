internal import CCurlNghttp2
import HeraldCore

/// The APNs header fields of one streaming slot's requests, ready for nghttp2, which
/// CCurlNghttp2 appends to the request libcurl submits. libcurl's own header list formats
/// each byte through its printf engine and parses the result back (about 45,000 instructions per
/// push); these are copied once by nghttp2 instead.
///
/// Per request only the apns-id and content-length change: each has its own buffer, every other
/// field is laid out again only when the request's other headers or the JWT change. :authority
/// and content-length replace libcurl's Host and Content-Length (`clearedByFields`), each an
/// aprintf per request in libcurl 7.88.
final class RequestFields {
    /// Whether libcurl's nghttp2_submit_request calls reach CCurlNghttp2 in this process.
    static let inEffect = herald_request_headers_in_effect() == 1

    /// :authority, content-length, apns-id, apns-topic, apns-push-type, apns-priority,
    /// apns-collapse-id, apns-expiration, authorization.
    private static let maxFields = 9
    /// Where the per-request values sit in `nv`; the fields before `apnsIdField` are the optional ones.
    private static let lengthField = 1, apnsIdField = 2

    /// Bodies nghttp2 took in more than one part (flow control), in the whole process (for tests).
    static var bodiesSplit: Int { Int(herald_request_bodies_split()) }

    /// Header lines that keep libcurl from making the fields this type makes itself.
    static let clearedByFields = ["Host:", "Content-Length:"]

    private let registered: UnsafeMutablePointer<herald_request_headers>
    private let nv: UnsafeMutablePointer<herald_nv>
    private var bytes: UnsafeMutablePointer<UInt8>
    private var capacity = 1024
    private var id: UnsafeMutablePointer<UInt8>
    private var idCapacity = 64
    private var key: StreamSlot.HeaderKey?
    private let authority: String
    private let length: UnsafeMutablePointer<UInt8>
    private var lengthDigits: [UInt8] = []

    /// `authority` is the endpoint's `host[:port]`, as libcurl's Host header would give it.
    init(easy: UnsafeMutableRawPointer, authority: String) {
        self.authority = authority
        length = .allocate(capacity: 20)
        nv = .allocate(capacity: Self.maxFields)
        bytes = .allocate(capacity: capacity)
        id = .allocate(capacity: idCapacity)
        registered = .allocate(capacity: 1)
        registered.initialize(to: herald_request_headers(easy: easy, nv: nv, count: 0, optional: Self.apnsIdField, pending: 0,
                                                          withheld: 0, body: nil, body_length: 0, body_sent: 0, stream_id: 0, next: nil))
        herald_request_headers_register(registered)
    }

    deinit {
        herald_request_headers_unregister(registered)
        registered.deallocate()
        nv.deallocate()
        bytes.deallocate()
        id.deallocate()
        length.deallocate()
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
        lengthDigits.removeAll(keepingCapacity: true)
        DecimalDigits.append(r.payload.count, to: &lengthDigits)
        length.update(from: lengthDigits, count: lengthDigits.count)
        nv[Self.lengthField].value = length
        nv[Self.lengthField].valuelen = lengthDigits.count
        self.key = key
        registered.pointee.body = body
        registered.pointee.body_length = r.payload.count
        registered.pointee.pending = 1
    }

    /// Takes the fields off the handle: its requests go out with libcurl's header list.
    func clear() {
        registered.pointee.count = 0
        registered.pointee.pending = 0
        registered.pointee.body = nil
        key = nil
    }

    /// False while the request prepared last has not been handed to nghttp2 with these fields.
    var wentOut: Bool { registered.pointee.pending == 0 }

    /// Tests only: the next requests go out without the fields, as when libcurl's calls do not reach CCurlNghttp2.
    var withheld: Bool {
        get { registered.pointee.withheld != 0 }
        set { registered.pointee.withheld = newValue ? 1 : 0 }
    }

    private func layOut(_ r: PushRequest, jwt: String?) {
        var fields: [(String, String)] = [(":authority", authority), ("content-length", ""), ("apns-id", ""), ("apns-topic", r.topic), ("apns-push-type", r.pushType.rawValue),
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
            nv[i] = herald_nv(name: n.0, value: v.0, namelen: n.1, valuelen: v.1, flags: 0)
        }
        registered.pointee.count = fields.count
    }
}
