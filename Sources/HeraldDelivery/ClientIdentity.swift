internal import CCurl
import Foundation

/// A TLS client certificate for APNs certificate authentication (Apple: "a certificate-based
/// connection"; requests carry no `authorization`).
///
/// Loaded and checked once (ClientIdentity+Loading.swift), then handed to libcurl as in-memory
/// blobs (CURLOPT_SSLCERT_BLOB / SSLKEY_BLOB, libcurl ≥ 7.71 with OpenSSL): no temporary file,
/// and every connection presents exactly the bytes that were checked. The password goes only to
/// CURLOPT_KEYPASSWD; `description` never shows it.
public struct ClientIdentity: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    enum Material: Sendable, Equatable {
        /// PEM files that libcurl reads itself (tests that hold simulator-issued files).
        case pemFiles(certificate: String, key: String)
        /// A PEM certificate (chain) and PEM private key, in memory.
        case pem(certificate: [UInt8], key: [UInt8])
        /// A PKCS#12 bundle, in memory.
        case p12([UInt8])
    }

    let material: Material
    let password: String?
    /// Where the certificate came from, for messages: file paths only.
    public let label: String
    /// The certificate's notAfter (nil when libcurl reads the files itself).
    public let expiresAt: Date?

    /// PEM files of the certificate and its unencrypted private key, read by libcurl at connect time.
    public init(certificatePEMPath: String, privateKeyPEMPath: String) {
        self.init(material: .pemFiles(certificate: certificatePEMPath, key: privateKeyPEMPath), password: nil,
                  label: certificatePEMPath, expiresAt: nil)
    }

    init(material: Material, password: String?, label: String, expiresAt: Date?) {
        self.material = material; self.password = password; self.label = label; self.expiresAt = expiresAt
    }

    public var description: String { "client certificate \(label)" }
    public var debugDescription: String { description }

    func apply(to handle: UnsafeMutableRawPointer) throws(DeliveryError) {
        switch material {
        case .pemFiles(let cert, let key):
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_SSLCERTTYPE, "PEM"), "set client certificate type")
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_SSLCERT, cert), "set client certificate")
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_SSLKEYTYPE, "PEM"), "set client key type")
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_SSLKEY, key), "set client key")
        case .pem(let cert, let key):
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_SSLCERTTYPE, "PEM"), "set client certificate type")
            try Self.setBlob(handle, CURLOPT_SSLCERT_BLOB, cert, "set client certificate")
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_SSLKEYTYPE, "PEM"), "set client key type")
            try Self.setBlob(handle, CURLOPT_SSLKEY_BLOB, key, "set client key")
        case .p12(let bundle):
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_SSLCERTTYPE, "P12"), "set client certificate type")
            try Self.setBlob(handle, CURLOPT_SSLCERT_BLOB, bundle, "set client certificate")
        }
        if let password {
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_KEYPASSWD, password), "set client key password")
        }
    }

    /// CURL_BLOB_COPY: libcurl keeps its own copy, so the Swift array need not outlive the call.
    private static func setBlob(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ bytes: [UInt8], _ what: String) throws(DeliveryError) {
        var copy = bytes
        let code = copy.withUnsafeMutableBytes { raw -> CURLcode in
            var blob = curl_blob(data: raw.baseAddress, len: raw.count, flags: UInt32(CURL_BLOB_COPY))
            return herald_easy_setopt_ptr(handle, option, &blob)
        }
        try curlCheck(code, what)
    }
}
