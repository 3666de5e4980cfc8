import Foundation
import NIOSSL
import X509

/// The server's certificate chain and key, the PEM a client must trust, and for certificate
/// authentication the CAs client certificates must chain to.
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

    /// The TLS server configuration: TLS 1.2+, ALPN `h2` only, and with `clientCA` a verified
    /// client certificate: required (NIOSSL maps `.noHostnameVerification` on a server to
    /// SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT: no certificate, no handshake), or with
    /// `certificateOptional` requested and verified when presented (`.optionalVerification`,
    /// SSL_VERIFY_PEER alone), so provider-token clients share the port.
    func serverConfiguration(clientCA: [NIOSSLCertificate]?, certificateOptional: Bool = false) -> TLSConfiguration {
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) },
                                                           privateKey: .privateKey(privateKey))
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["h2"]
        if let clientCA {
            tls.certificateVerification = certificateOptional ? .optionalVerification : .noHostnameVerification
            tls.trustRoots = .certificates(clientCA)
        }
        return tls
    }

    /// Reads an operator's PEM files. The certificate file is also what clients trust.
    static func read(certificatePath: String, keyPath: String) throws(SimulatorError) -> SimulatorTLSMaterial {
        let certificatePEM = try readText(certificatePath, role: "TLS certificate")
        let keyPEM = try readText(keyPath, role: "TLS private key")
        let chain = try certificates(certificatePEM, path: certificatePath)
        let key: NIOSSLPrivateKey
        do { key = try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem) } catch {
            throw .badTLSMaterial("\(keyPath) is not a PEM private key")
        }
        return SimulatorTLSMaterial(chain: chain, privateKey: key, trustPEM: certificatePEM)
    }

    /// The client-certificate CAs of `--client-ca`.
    static func readClientCA(_ path: String) throws(SimulatorError) -> [NIOSSLCertificate] {
        try certificates(try readText(path, role: "client CA"), path: path)
    }

    private static func certificates(_ pem: String, path: String) throws(SimulatorError) -> [NIOSSLCertificate] {
        let chain: [NIOSSLCertificate]
        do { chain = try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)) } catch {
            throw .badTLSMaterial("\(path) is not a PEM certificate (\(error))")
        }
        guard !chain.isEmpty else { throw .badTLSMaterial("\(path) holds no PEM certificate") }
        return chain
    }

    private static func readText(_ path: String, role: String) throws(SimulatorError) -> String {
        guard FileManager.default.isReadableFile(atPath: path), let data = FileManager.default.contents(atPath: path) else {
            let detail = FileManager.default.fileExists(atPath: path) ? "permission denied or not a regular file" : "no such file"
            throw .unreadableFile(role: role, path: path, detail: detail)
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// A fresh CA and a leaf it signs for the names clients dial (127.0.0.1, ::1, localhost and
    /// the bind host).
    static func generate(host: String) throws(SimulatorError) -> SimulatorTLSMaterial {
        let ca = try SimulatorCertificateAuthority()
        let leaf = try ca.issueServerCertificate(names: subjectAlternativeNames(host: host))
        do {
            return SimulatorTLSMaterial(
                chain: [try NIOSSLCertificate(bytes: Array(leaf.certificatePEM.utf8), format: .pem)],
                privateKey: try NIOSSLPrivateKey(bytes: Array(leaf.privateKeyPEM.utf8), format: .pem),
                trustPEM: ca.certificatePEM)
        } catch {
            throw .badTLSMaterial("cannot load the generated simulator certificate: \(error)")
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
