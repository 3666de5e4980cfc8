import Foundation
import HeraldCore

/// Why the job's client certificate cannot be used. Found before anything is sent; each message
/// names the job field to fix and never contains the password.
public enum ClientCertificateError: Error, Equatable, CustomStringConvertible {
    case unreadable(field: String, path: String, why: String)
    case passwordVariableMissing(variable: String)
    case notPKCS12(path: String)
    case wrongPassword(field: String, path: String, variable: String?)
    case unsupportedEncryption(path: String, detail: String)
    case incomplete(path: String, missing: String)
    case notPEMCertificate(path: String)
    case notPEMKey(path: String, detail: String)
    case keyMismatch(certificate: String, key: String)
    case expired(path: String, notAfter: Date)
    case notYetValid(path: String, notBefore: Date)

    public var description: String {
        switch self {
        case .unreadable(let field, let path, let why):
            return "apns.certificate.\(field): cannot read \(path): \(why)"
        case .passwordVariableMissing(let v):
            return "apns.certificate.password_env: environment variable \(v) is not set"
        case .notPKCS12(let path):
            return "apns.certificate.p12_file: \(path) is not a PKCS#12 (.p12) file"
        case .wrongPassword(let field, let path, let variable?):
            return "apns.certificate.password_env: the password in $\(variable) does not open \(path) (apns.certificate.\(field)): wrong password"
        case .wrongPassword(let field, let path, nil):
            return "apns.certificate.\(field): \(path) is password-protected: name the variable holding its password with apns.certificate.password_env"
        case .unsupportedEncryption(let path, let detail):
            return "apns.certificate.p12_file: \(path) opens with this password but uses an encryption this OpenSSL cannot read, even with its "
                + "legacy provider (\(detail)); re-export it with current algorithms: openssl pkcs12 -legacy -in old.p12 -nodes | openssl pkcs12 -export -out new.p12"
        case .incomplete(let path, let missing):
            return "apns.certificate.p12_file: \(path) holds no \(missing)"
        case .notPEMCertificate(let path):
            return "apns.certificate.cert_file: \(path) is not a PEM certificate (-----BEGIN CERTIFICATE-----)"
        case .notPEMKey(let path, let detail):
            return "apns.certificate.key_file: \(path) is not a usable PEM private key (\(detail))"
        case .keyMismatch(let cert, let key):
            return "apns.certificate: the private key \(key) does not belong to the certificate \(cert)"
        case .expired(let path, let date):
            return "apns.certificate: the certificate in \(path) expired on \(Self.day(date)); renew it in Apple's developer portal"
        case .notYetValid(let path, let date):
            return "apns.certificate: the certificate in \(path) is not valid before \(Self.day(date))"
        }
    }

    static func day(_ d: Date) -> String { UTCText.seconds(d) }
}
