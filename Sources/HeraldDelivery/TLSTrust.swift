internal import CCurl
import Foundation

/// Which certificate authorities the client trusts for the APNs endpoint.
/// libcurl's CAINFO *replaces* the system store; it does not add to it.
public enum TLSTrust: Sendable, Equatable {
    /// The system trust store (Apple's production and sandbox servers).
    case system
    /// A PEM bundle file (job `apns.ca_file`).
    case caFile(String)
    /// PEM text in memory (the in-process simulator's fresh CA; never written to disk).
    case caPEM(String)

    func apply(to handle: UnsafeMutableRawPointer) throws(DeliveryError) {
        switch self {
        case .system:
            return
        case .caFile(let path):
            try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_CAINFO, path), "set CA file")
        case .caPEM(let pem):
            var bytes = Array(pem.utf8)
            let code = bytes.withUnsafeMutableBytes { raw -> CURLcode in
                var blob = curl_blob(data: raw.baseAddress, len: raw.count, flags: UInt32(CURL_BLOB_COPY))
                return herald_easy_setopt_ptr(handle, CURLOPT_CAINFO_BLOB, &blob)
            }
            try curlCheck(code, "set CA certificate")
        }
    }
}

/// A TLS client certificate for APNs certificate authentication: PEM files of the certificate
/// and its private key. Paths only: libcurl reads them, their content never passes through herald.
public struct ClientIdentity: Sendable, Equatable {
    public var certificatePEMPath: String
    public var privateKeyPEMPath: String

    public init(certificatePEMPath: String, privateKeyPEMPath: String) {
        self.certificatePEMPath = certificatePEMPath
        self.privateKeyPEMPath = privateKeyPEMPath
    }

    func apply(to handle: UnsafeMutableRawPointer) throws(DeliveryError) {
        try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_SSLCERTTYPE, "PEM"), "set client certificate type")
        try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_SSLCERT, certificatePEMPath), "set client certificate")
        try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_SSLKEYTYPE, "PEM"), "set client key type")
        try curlCheck(herald_easy_setopt_cstr(handle, CURLOPT_SSLKEY, privateKeyPEMPath), "set client key")
    }
}
