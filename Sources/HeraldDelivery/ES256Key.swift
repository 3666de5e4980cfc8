internal import COpenSSL
import Foundation

/// An EC P-256 private key held by OpenSSL (the one place libcrypto is wrapped).
/// Signs in JOSE form: 64 bytes R‖S, not OpenSSL's DER, as JWS ES256 requires (RFC 7518 §3.4).
final class ES256Key: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is immutable after init and OpenSSL 3 allows concurrent signing
    // with one key when each call uses its own EVP_MD_CTX, which sign() does.
    private let pkey: OpaquePointer

    init(pem: String, source: String) throws(DeliveryError) {
        var bytes = Array(pem.utf8)
        let parsed: OpaquePointer? = bytes.withUnsafeMutableBytes { raw -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        ERR_clear_error()
        guard let key = parsed else { throw .keyInvalid(source: source, why: "not a PEM private key") }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC, EVP_PKEY_get_bits(key) == 256 else {
            EVP_PKEY_free(key)
            throw .keyInvalid(source: source, why: "not an elliptic-curve P-256 key")
        }
        pkey = key
    }

    deinit { EVP_PKEY_free(pkey) }

    func sign(_ message: [UInt8]) throws(DeliveryError) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw .signingFailed("out of memory") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { throw .signingFailed(Self.opensslError()) }
        var length = 0
        guard EVP_DigestSign(ctx, nil, &length, message, message.count) == 1 else { throw .signingFailed(Self.opensslError()) }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(ctx, &der, &length, message, message.count) == 1 else { throw .signingFailed(Self.opensslError()) }
        return try Self.joseSignature(der: Array(der.prefix(length)))
    }

    /// DER `ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` → 32-byte big-endian r ‖ s.
    static func joseSignature(der: [UInt8]) throws(DeliveryError) -> [UInt8] {
        let decoded: OpaquePointer? = der.withUnsafeBufferPointer { buf -> OpaquePointer? in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            return d2i_ECDSA_SIG(nil, &p, buf.count)
        }
        guard let sig = decoded else { throw .signingFailed("OpenSSL returned a malformed signature") }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(sig, &r, &s)
        var out = [UInt8](repeating: 0, count: 64)
        let ok = out.withUnsafeMutableBufferPointer { buf -> Bool in
            BN_bn2binpad(r, buf.baseAddress, 32) == 32 && BN_bn2binpad(s, buf.baseAddress! + 32, 32) == 32
        }
        guard ok else { throw .signingFailed("signature component does not fit 32 bytes") }
        return out
    }

    static func opensslError() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "unknown OpenSSL error" }
        var buf = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buf, buf.count)
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
