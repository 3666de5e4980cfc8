import Foundation
import HeraldSimulator

/// A client certificate issued by a simulator CA, written the ways operators hold Apple's push
/// certificate: PEM certificate + PEM key, the key encrypted, and a .p12 bundle. The .p12 and the
/// encrypted key are made by the openssl command line tool, as an operator would make them.
public struct ClientCertificateFiles: Sendable {
    public let certificate: String
    public let key: String
    public let encryptedKey: String
    public let p12: String
    /// The same bundle with RC2-40/3DES encryption, as Keychain Access exports it (`openssl pkcs12 -legacy`).
    public let legacyP12: String
    public let password: String

    public init(issuedBy ca: SimulatorCertificateAuthority, name: String, in dir: TemporaryDirectory,
                password: String = "s3cret-p12-pass!") throws {
        let issued = try ca.issueClientCertificate(commonName: name)
        certificate = try dir.write("certs/\(name).pem", issued.certificatePEM)
        key = try dir.write("certs/\(name).key", issued.privateKeyPEM)
        chmod(key, 0o600)
        encryptedKey = dir.file("certs/\(name).enc.key")
        p12 = dir.file("certs/\(name).p12")
        legacyP12 = dir.file("certs/\(name).legacy.p12")
        self.password = password
        let env = ProcessInfo.processInfo.environment.merging(["HERALD_TEST_PASS": password]) { _, new in new }
        for args in [["pkcs12", "-export", "-in", certificate, "-inkey", key, "-out", p12, "-passout", "env:HERALD_TEST_PASS"],
                     ["pkcs12", "-export", "-legacy", "-in", certificate, "-inkey", key, "-out", legacyP12, "-passout", "env:HERALD_TEST_PASS"],
                     ["pkey", "-in", key, "-aes256", "-passout", "env:HERALD_TEST_PASS", "-out", encryptedKey]] {
            let r = try ProcessRunner.run("/usr/bin/env", ["openssl"] + args, environment: env)
            guard r.status == 0 else { throw TestSupportError("openssl \(args[0]) failed: \(r.stderr)") }
        }
    }
}
