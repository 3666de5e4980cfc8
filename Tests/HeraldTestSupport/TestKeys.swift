import Foundation
import HeraldSimulator

/// A fresh ES256 key pair per use, written as a .p8 file when a job needs one. Never committed.
public struct TestKey: Sendable {
    public let privateKeyPEM: String
    public let publicKeyPEM: String
    public static let teamId = "TEAM123456"
    public static let keyId = "KEY1234567"

    public init() {
        (privateKeyPEM, publicKeyPEM) = SimulatorCredentials.generate()
    }

    /// Writes the key as `AuthKey_<kid>.p8` (mode 0600) in `dir` and returns its path.
    public func writeP8(in dir: TemporaryDirectory) throws -> String {
        let path = try dir.write("AuthKey_\(Self.keyId).p8", privateKeyPEM)
        chmod(path, 0o600)
        return path
    }
}
