import Crypto
import Foundation
import X509

/// A throwaway P-256 certificate authority: the simulator's own server CA, and the CA that issues
/// client certificates for rehearsing certificate authentication (`--client-ca`).
///
/// Certificates are valid from a day ago for a year, so small clock differences do not matter.
/// They must pass OpenSSL 3's full verification as libcurl does it: SAN entries for the names
/// clients dial, keyUsage digitalSignature, the right extendedKeyUsage, and SKI/AKI linking the
/// leaf to the CA.
public struct SimulatorCertificateAuthority: Sendable {
    private let key: P256.Signing.PrivateKey
    private let certificate: Certificate
    private let keyIdentifier: SubjectKeyIdentifier

    /// The CA certificate, PEM: what a client passes as its CA file, or the simulator as `--client-ca`.
    public let certificatePEM: String

    public init(commonName: String = "herald APNs simulator CA") throws(SimulatorError) {
        do {
            let caKey = P256.Signing.PrivateKey()
            let publicKey = Certificate.PublicKey(caKey.publicKey)
            let caKeyId = SubjectKeyIdentifier(hash: publicKey)
            let name = try DistinguishedName {
                OrganizationName("herald")
                CommonName(commonName)
            }
            let (notBefore, notAfter) = Self.validity()
            let ca = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
                notValidBefore: notBefore, notValidAfter: notAfter, issuer: name, subject: name,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                    Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                    caKeyId
                },
                issuerPrivateKey: Certificate.PrivateKey(caKey))
            certificatePEM = try ca.serializeAsPEM().pemString + "\n"
            key = caKey
            certificate = ca
            keyIdentifier = caKeyId
        } catch {
            throw .badTLSMaterial("cannot generate a certificate authority: \(error)")
        }
    }

    /// A certificate and its PKCS#8 private key, both PEM.
    public struct Issued: Sendable {
        public let certificatePEM: String
        public let privateKeyPEM: String
    }

    /// A server certificate for `names` (DNS names and IP literals).
    public func issueServerCertificate(names: [GeneralName]) throws(SimulatorError) -> Issued {
        try issue(commonName: "localhost", usage: .serverAuth, names: names)
    }

    /// A client certificate, as Apple issues one per app: the common name is free text.
    public func issueClientCertificate(commonName: String) throws(SimulatorError) -> Issued {
        try issue(commonName: commonName, usage: .clientAuth, names: [])
    }

    private func issue(commonName: String, usage: ExtendedKeyUsage.Usage, names: [GeneralName]) throws(SimulatorError) -> Issued {
        do {
            let leafKey = P256.Signing.PrivateKey()
            let leafPublic = Certificate.PublicKey(leafKey.publicKey)
            let subject = try DistinguishedName {
                OrganizationName("herald")
                CommonName(commonName)
            }
            let keyId = keyIdentifier.keyIdentifier
            let (notBefore, notAfter) = Self.validity()
            let leaf = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: leafPublic,
                notValidBefore: notBefore, notValidAfter: notAfter, issuer: certificate.subject, subject: subject,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    try ExtendedKeyUsage([usage])
                    if !names.isEmpty { SubjectAlternativeNames(names) }
                    SubjectKeyIdentifier(hash: leafPublic)
                    AuthorityKeyIdentifier(keyIdentifier: keyId)
                },
                issuerPrivateKey: Certificate.PrivateKey(key))
            return Issued(certificatePEM: try leaf.serializeAsPEM().pemString + "\n", privateKeyPEM: leafKey.pemRepresentation + "\n")
        } catch {
            throw .badTLSMaterial("cannot issue a certificate: \(error)")
        }
    }

    private static func validity() -> (Date, Date) {
        let now = Date()
        return (now.addingTimeInterval(-86_400), now.addingTimeInterval(365 * 86_400))
    }
}
