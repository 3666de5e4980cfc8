internal import COpenSSL
import Foundation
import HeraldCore

/// Reading and checking the job's certificate with OpenSSL before the first connection: libcurl
/// would only find a wrong password or a mismatched key at connect time, as a transport error on
/// every request. Here each problem is one message naming the job field, and exit 2.
extension ClientIdentity {
    public static func load(_ spec: CertificateAuthSpec,
                            environment: [String: String] = ProcessInfo.processInfo.environment,
                            now: Date = Date()) throws(ClientCertificateError) -> ClientIdentity {
        var password: String?
        if let name = spec.passwordEnv {
            guard let v = environment[name] else { throw .passwordVariableMissing(variable: name) }
            password = v
        }
        defer { ERR_clear_error() }
        switch spec {
        case .p12(let path, let variable):
            let bytes = try read(path, field: "p12_file")
            let (expiry, converted) = try checkPKCS12(bytes, path: path, password: password ?? "", variable: variable, now: now)
            if let converted {
                return ClientIdentity(material: .pem(certificate: converted.certificate, key: converted.key), password: nil, label: path, expiresAt: expiry)
            }
            return ClientIdentity(material: .p12(bytes), password: password ?? "", label: path, expiresAt: expiry)
        case .pem(let certPath, let keyPath, let variable):
            let cert = try read(certPath, field: "cert_file")
            let key = try read(keyPath, field: "key_file")
            let expiry = try checkPEM(cert: cert, certPath: certPath, key: key, keyPath: keyPath, password: password, variable: variable, now: now)
            return ClientIdentity(material: .pem(certificate: cert, key: key), password: password, label: certPath, expiresAt: expiry)
        }
    }

    private static func read(_ path: String, field: String) throws(ClientCertificateError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .unreadable(field: field, path: path, why: FileManager.default.fileExists(atPath: path) ? "permission denied" : "no such file")
        }
        return Array(data)
    }

    /// The MAC is checked first: it fails exactly when the password is wrong, whereas
    /// PKCS12_parse also fails for a right password on a bundle encrypted with RC2-40, as Keychain
    /// Access exports certificates, which OpenSSL 3 leaves to its legacy provider. Then the legacy
    /// provider is loaded (keeping the default one) and the bundle re-read; the certificate, its
    /// chain and key go to libcurl as PEM in memory (`converted`), since libcurl reads P12 blobs
    /// with the same OpenSSL.
    /// OpenSSL's legacy provider (RC2, 3DES for old PKCS#12 bundles), loaded beside the default
    /// one at the first bundle that needs it and kept for the life of the process. Each
    /// `OSSL_PROVIDER_try_load` returns a new reference that only `OSSL_PROVIDER_unload` drops; a
    /// load per bundle would leave one behind each time (LeakSanitizer reports it), and unloading
    /// after the parse could pull the provider from under another thread reading a bundle. A
    /// `static let` is initialised once, thread-safely; nil when the provider is not installed.
    nonisolated(unsafe) private static let legacyProvider = OSSL_PROVIDER_try_load(nil, "legacy", 1)

    private static func checkPKCS12(_ bytes: [UInt8], path: String, password: String, variable: String?,
                                    now: Date) throws(ClientCertificateError) -> (Date?, (certificate: [UInt8], key: [UInt8])?) {
        guard let p12 = withBIO(bytes, { d2i_PKCS12_bio($0, nil) }) else { throw .notPKCS12(path: path) }
        defer { PKCS12_free(p12) }
        if PKCS12_mac_present(p12) == 1, PKCS12_verify_mac(p12, password, Int32(password.utf8.count)) != 1 {
            throw .wrongPassword(field: "p12_file", path: path, variable: variable)
        }
        var pkey: OpaquePointer?
        var cert: OpaquePointer?
        var chain: OpaquePointer?
        var legacy = false
        if PKCS12_parse(p12, password, &pkey, &cert, &chain) != 1 {
            let detail = ES256Key.opensslError()
            guard legacyProvider != nil, PKCS12_parse(p12, password, &pkey, &cert, &chain) == 1 else {
                ERR_clear_error()
                throw .unsupportedEncryption(path: path, detail: detail)
            }
            legacy = true
        }
        defer {
            EVP_PKEY_free(pkey)
            X509_free(cert)
            OPENSSL_sk_pop_free(chain, { X509_free(OpaquePointer($0)) })
        }
        guard let cert else { throw .incomplete(path: path, missing: "certificate") }
        guard let pkey else { throw .incomplete(path: path, missing: "private key") }
        guard X509_check_private_key(cert, pkey) == 1 else { throw .keyMismatch(certificate: path, key: path) }
        let expiry = try validity(cert, path: path, now: now)
        guard legacy else { return (expiry, nil) }
        var certificatePEM = pem { PEM_write_bio_X509($0, cert) }
        for i in 0..<max(0, Int(OPENSSL_sk_num(chain))) {
            if let extra = OPENSSL_sk_value(chain, Int32(i)) { certificatePEM += pem { PEM_write_bio_X509($0, OpaquePointer(extra)) } }
        }
        return (expiry, (certificatePEM, pem { PEM_write_bio_PrivateKey($0, pkey, nil, nil, 0, nil, nil) }))
    }

    /// What `write` puts into a memory BIO, as bytes.
    private static func pem(_ write: (OpaquePointer) -> Int32) -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { return [] }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { return [] }
        var data: UnsafeMutableRawPointer?
        let n = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &data)   // BIO_get_mem_data, a macro
        guard n > 0, let data else { return [] }
        return Array(UnsafeRawBufferPointer(start: data, count: Int(n)))
    }

    private static func checkPEM(cert: [UInt8], certPath: String, key: [UInt8], keyPath: String, password: String?,
                                 variable: String?, now: Date) throws(ClientCertificateError) -> Date? {
        guard let x509 = withBIO(cert, { PEM_read_bio_X509($0, nil, nil, nil) }) else { throw .notPEMCertificate(path: certPath) }
        defer { X509_free(x509) }
        // A password string (even empty) as the callback argument: OpenSSL's default callback then
        // uses it instead of prompting on the terminal.
        let pass = password ?? ""
        let pkey = pass.withCString { p in
            withBIO(key, { PEM_read_bio_PrivateKey($0, nil, nil, UnsafeMutableRawPointer(mutating: p)) })
        }
        guard let pkey else {
            let encrypted = String(decoding: key, as: UTF8.self).contains("ENCRYPTED")
            if encrypted { throw .wrongPassword(field: "key_file", path: keyPath, variable: variable) }
            throw .notPEMKey(path: keyPath, detail: ES256Key.opensslError())
        }
        defer { EVP_PKEY_free(pkey) }
        guard X509_check_private_key(x509, pkey) == 1 else { throw .keyMismatch(certificate: certPath, key: keyPath) }
        return try validity(x509, path: certPath, now: now)
    }

    /// An expired certificate is refused here rather than by APNs mid-campaign (403 BadCertificate).
    private static func validity(_ cert: OpaquePointer, path: String, now: Date) throws(ClientCertificateError) -> Date? {
        let notAfter = date(X509_get0_notAfter(cert))
        let notBefore = date(X509_get0_notBefore(cert))
        if let notAfter, notAfter < now { throw .expired(path: path, notAfter: notAfter) }
        if let notBefore, notBefore > now { throw .notYetValid(path: path, notBefore: notBefore) }
        return notAfter
    }

    private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let time else { return nil }
        var t = tm()
        guard ASN1_TIME_to_tm(time, &t) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&t)))
    }

    private static func withBIO(_ bytes: [UInt8], _ body: (OpaquePointer) -> OpaquePointer?) -> OpaquePointer? {
        bytes.withUnsafeBytes { raw -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        }
    }
}
