import Crypto

/// ES256 key material for runs against the simulator. Key bytes are returned to the caller
/// and never printed here.
public enum SimulatorCredentials {
    /// A fresh P-256 key for demo/test runs: PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----", what a
    /// .p8 file holds) and its SPKI public PEM ("-----BEGIN PUBLIC KEY-----").
    public static func generate() -> (privateKeyPEM: String, publicKeyPEM: String) {
        let key = P256.Signing.PrivateKey()
        return (key.pemRepresentation, key.publicKey.pemRepresentation)
    }

    /// SPKI public PEM derived from a .p8 PKCS#8 PEM, so a job's own key can be used against
    /// the in-process simulator. SEC1 ("BEGIN EC PRIVATE KEY") PEMs are accepted too.
    public static func publicKeyPEM(fromPrivateKeyPEM pem: String) throws(SimulatorError) -> String {
        do {
            return try P256.Signing.PrivateKey(pemRepresentation: pem).publicKey.pemRepresentation
        } catch {
            // The underlying error names only the parse step; never echo the PEM itself.
            throw .badPrivateKey("\(error)")
        }
    }

    /// SPKI public PEM from either a .p8 private key PEM (its public half) or a public key PEM
    /// (checked to be P-256), as `herald sim --token-key` takes either.
    public static func publicKeyPEM(fromKeyPEM pem: String) throws(SimulatorError) -> String {
        if pem.contains("PRIVATE KEY-----") { return try publicKeyPEM(fromPrivateKeyPEM: pem) }
        do {
            return try P256.Signing.PublicKey(pemRepresentation: pem).pemRepresentation
        } catch {
            throw .badPublicKey("\(error)")
        }
    }
}
