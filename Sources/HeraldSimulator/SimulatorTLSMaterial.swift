import Crypto
import Foundation
import NIOSSL
import X509

/// The server's certificate chain and key, plus the PEM a client must trust.
struct SimulatorTLSMaterial {
    var chain: [NIOSSLCertificate]
    var privateKey: NIOSSLPrivateKey
    /// What clients pass to CURLOPT_CAINFO / `--cacert`.
    var trustPEM: String

    static func load(_ tls: SimulatorTLS, host: String) throws(SimulatorError) -> SimulatorTLSMaterial {
        switch tls {
        case .generated: return try generate(host: host)
        case .files(let certificatePath, let keyPath): return try read(certificatePath: certificatePath, keyPath: keyPath)
        }
    }

    /// Reads an operator's PEM files. The certificate file is also what clients trust.
    static func read(certificatePath: String, keyPath: String) throws(SimulatorError) -> SimulatorTLSMaterial {
        let certificatePEM = try readText(certificatePath, role: "certificate")
        let keyPEM = try readText(keyPath, role: "private key")
        do {
            let chain = try NIOSSLCertificate.fromPEMBytes(Array(certificatePEM.utf8))
            guard !chain.isEmpty else { throw SimulatorError.badTLSMaterial("\(certificatePath) holds no PEM certificate") }
            let key: NIOSSLPrivateKey
            do { key = try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem) } catch {
                throw SimulatorError.badTLSMaterial("\(keyPath) is not a PEM private key")
            }
            return SimulatorTLSMaterial(chain: chain, privateKey: key, trustPEM: certificatePEM)
        } catch let error as SimulatorError {
            throw error
        } catch {
            throw .badTLSMaterial("\(certificatePath) is not a PEM certificate (\(error))")
        }
    }

    private static func readText(_ path: String, role: String) throws(SimulatorError) -> String {
        guard FileManager.default.isReadableFile(atPath: path), let data = FileManager.default.contents(atPath: path) else {
            let detail = FileManager.default.fileExists(atPath: path) ? "permission denied or not a regular file" : "no such file"
            throw .unreadableFile(role: role, path: path, detail: detail)
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// A fresh CA and a leaf it signs, both P-256, valid from a day ago for a year.
    ///
    /// The leaf must pass OpenSSL 3's full verification as libcurl does it with
    /// CURLOPT_CAINFO: SAN entries for the names clients dial (127.0.0.1, ::1, localhost and the
    /// bind host), keyUsage digitalSignature, extendedKeyUsage serverAuth, and SKI/AKI linking
    /// the leaf to the CA. A start time in the past tolerates small clock differences.
    static func generate(host: String) throws(SimulatorError) -> SimulatorTLSMaterial {
        do {
            let now = Date()
            let notBefore = now.addingTimeInterval(-86_400)
            let notAfter = now.addingTimeInterval(365 * 86_400)

            let caKey = P256.Signing.PrivateKey()
            let caPublic = Certificate.PublicKey(caKey.publicKey)
            let caKeyId = SubjectKeyIdentifier(hash: caPublic)
            let caName = try DistinguishedName {
                OrganizationName("herald")
                CommonName("herald APNs simulator CA")
            }
            let ca = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: caPublic,
                notValidBefore: notBefore, notValidAfter: notAfter, issuer: caName, subject: caName,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                    Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                    caKeyId
                },
                issuerPrivateKey: Certificate.PrivateKey(caKey))

            let leafKey = P256.Signing.PrivateKey()
            let leafPublic = Certificate.PublicKey(leafKey.publicKey)
            let leafName = try DistinguishedName {
                OrganizationName("herald")
                CommonName("localhost")
            }
            let leaf = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: leafPublic,
                notValidBefore: notBefore, notValidAfter: notAfter, issuer: caName, subject: leafName,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    try ExtendedKeyUsage([.serverAuth])
                    SubjectAlternativeNames(subjectAlternativeNames(host: host))
                    SubjectKeyIdentifier(hash: leafPublic)
                    AuthorityKeyIdentifier(keyIdentifier: caKeyId.keyIdentifier)
                },
                issuerPrivateKey: Certificate.PrivateKey(caKey))

            let caPEM = try ca.serializeAsPEM().pemString
            let leafPEM = try leaf.serializeAsPEM().pemString
            return SimulatorTLSMaterial(
                chain: [try NIOSSLCertificate(bytes: Array(leafPEM.utf8), format: .pem)],
                privateKey: try NIOSSLPrivateKey(bytes: Array(leafKey.pemRepresentation.utf8), format: .pem),
                trustPEM: caPEM + "\n")
        } catch {
            throw .badTLSMaterial("cannot generate the simulator certificate: \(error)")
        }
    }

    /// localhost, 127.0.0.1, ::1, and the bind host when it is something else.
    static func subjectAlternativeNames(host: String) -> [GeneralName] {
        var names: [GeneralName] = [.dnsName("localhost"), .ipAddress(.init(contentBytes: [127, 0, 0, 1])),
                                    .ipAddress(.init(contentBytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]))]
        if host == "localhost" || host == "127.0.0.1" || host == "::1" || host.isEmpty { return names }
        if let bytes = ipAddressBytes(host) {
            if bytes != [0, 0, 0, 0] && bytes != [UInt8](repeating: 0, count: 16) {
                names.append(.ipAddress(.init(contentBytes: bytes[...])))
            }
        } else {
            names.append(.dnsName(host))
        }
        return names
    }

    /// The network-order bytes of an IPv4 or IPv6 literal, or nil for a name.
    static func ipAddressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
