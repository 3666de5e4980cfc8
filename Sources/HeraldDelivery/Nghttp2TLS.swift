internal import CHTTP2Client
import Foundation

/// The sender's TLS client context (CHTTP2Client's tls.c), built once per sender from the
/// job's trust (`apns.ca_file`, the simulator's CA, or the system's store) and client certificate.
/// Verification is always on; the key's password goes only to OpenSSL.
final class Nghttp2TLS: @unchecked Sendable {
    // @unchecked: OpenSSL's SSL_CTX is safe to share once built; nothing here changes after init.
    let context: OpaquePointer

    init(trust: TLSTrust, identity: ClientIdentity?) throws(DeliveryError) {
        var o = h2_tls_options()
        var owned: [UnsafeMutablePointer<CChar>] = []
        var buffers: [UnsafeMutableBufferPointer<UInt8>] = []
        defer {
            owned.forEach { free($0) }
            buffers.forEach { $0.deallocate() }
        }
        func c(_ s: String) -> UnsafePointer<CChar> {
            let p = strdup(s)!
            owned.append(p)
            return UnsafePointer(p)
        }
        func bytes(_ b: [UInt8]) -> (UnsafePointer<UInt8>, Int) {
            let p = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(1, b.count))
            _ = p.initialize(from: b)
            buffers.append(p)
            return (UnsafePointer(p.baseAddress!), b.count)
        }
        switch trust {
        case .system: break
        case .caFile(let path): o.ca_file = c(path)
        case .caPEM(let pem): (o.ca_pem, o.ca_pem_len) = bytes(Array(pem.utf8))
        }
        if let identity {
            switch identity.material {
            case .pemFiles(let cert, let key): o.cert_file = c(cert); o.key_file = c(key)
            case .pem(let cert, let key): (o.cert_pem, o.cert_pem_len) = bytes(cert); (o.key_pem, o.key_pem_len) = bytes(key)
            case .p12(let bundle): (o.p12, o.p12_len) = bytes(bundle)
            }
            if let password = identity.password { o.password = c(password) }
        }
        var err = [CChar](repeating: 0, count: 512)
        var kind = H2_OK
        // Never a trust failure (H2_ERR_TLS_SETUP or H2_ERR_MEMORY): no server has been asked yet.
        guard let ctx = h2_tls_new(&o, &kind, &err, err.count) else {
            let why = Nghttp2Endpoint.text(err)
            throw .engine(kind == H2_ERR_MEMORY ? "cannot set up TLS: out of memory: \(why)" : "cannot set up TLS: \(why)")
        }
        context = ctx
    }

    deinit { h2_tls_free(context) }
}
