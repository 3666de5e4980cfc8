import Foundation
import HeraldSimulator
import Testing

/// `herald sim` as its own process on a free port of 127.0.0.1, for `herald run --endpoint
/// --ca-file` and `herald channels`: its CA certificate in `sim/ca.pem`, its request log in
/// `sim/requests.ndjson` unless `log` names another. Stopped with SIGTERM by `stop()` (or when
/// released).
public final class SimulatorProcess: Sendable {
    public let process: BackgroundProcess
    /// `https://127.0.0.1:<port>`, as it printed it.
    public let url: String
    public let port: Int
    /// The channel management API's port (`management: true`).
    public let managementPort: Int?
    public let caFile: String
    public let log: String

    /// `trusting`: the provider-token key it verifies (`--team-id`, `--key-id`, `--auth-public-key`);
    /// `bundleId`: its `--bundle-id` (nil: none, for several apps); `arguments`: its other flags
    /// (faults, token rules, `--client-ca`, and for several apps `tokenKeyArguments` and
    /// `clientCAArguments`).
    public init(in dir: TemporaryDirectory, trusting key: TestKey? = nil, bundleId: String? = "com.example.app",
                log: String? = nil, management: Bool = false, arguments: [String] = []) throws {
        try FileManager.default.createDirectory(atPath: dir.file("sim"), withIntermediateDirectories: true)
        caFile = dir.file("sim/ca.pem")
        self.log = log ?? dir.file("sim/requests.ndjson")
        var args = ["sim", "--port", "0"] + (management ? ["--management-port", "0"] : [])
        if let key {
            args += ["--team-id", TestKey.teamId, "--key-id", TestKey.keyId, "--auth-public-key", try dir.write("sim/pub.pem", key.publicKeyPEM)]
        }
        if let bundleId { args += ["--bundle-id", bundleId] }
        args += ["--ca-out", caFile, "--log", self.log] + arguments
        process = try Herald().start(args)
        url = String(try process.waitForLine(prefix: "listening on ").dropFirst("listening on ".count))
        port = try #require(URL(string: url)?.port, "the simulator's URL: \(url)")
        managementPort = management
            ? try #require(URL(string: String(try process.waitForLine(prefix: "channel management on ").dropFirst("channel management on ".count)))?.port)
            : nil
    }

    /// `--token-key TEAM:KEY:<public key>[:bundles]`: one team's key whose tokens are signed by `key`
    /// with kid `keyId` and iss `teamId`, allowed `bundleIds` (none: any topic). Its public key is
    /// written to `sim/<keyId>.pub.pem`.
    public static func tokenKeyArguments(_ key: TestKey, teamId: String, keyId: String, bundleIds: [String] = [],
                                         in dir: TemporaryDirectory) throws -> [String] {
        try FileManager.default.createDirectory(atPath: dir.file("sim"), withIntermediateDirectories: true)
        let path = try dir.write("sim/\(keyId).pub.pem", key.publicKeyPEM)
        return ["--token-key", "\(teamId):\(keyId):\(path)" + (bundleIds.isEmpty ? "" : ":" + bundleIds.joined(separator: ","))]
    }

    /// `--client-ca <ca> --client-ca-bundle …`: certificates issued by `ca` may send to `bundleIds`
    /// (none: any topic). The CA is written to `sim/client-ca.pem`.
    public static func clientCAArguments(_ ca: SimulatorCertificateAuthority, bundleIds: [String] = [],
                                         in dir: TemporaryDirectory) throws -> [String] {
        try FileManager.default.createDirectory(atPath: dir.file("sim"), withIntermediateDirectories: true)
        return ["--client-ca", try dir.write("sim/client-ca.pem", ca.certificatePEM)] + bundleIds.flatMap { ["--client-ca-bundle", $0] }
    }

    /// `--endpoint <url> --ca-file <ca>` for `herald run`.
    public var endpointArguments: [String] { ["--endpoint", url, "--ca-file", caFile] }

    /// The log's lines, one object a request (and a last `stats` line once it stopped).
    public func entries() throws -> [[String: Any]] {
        FileManager.default.fileExists(atPath: log) ? try JSON.lines(log) : []
    }

    /// SIGTERM, then its exit status.
    @discardableResult
    public func stop() -> Int32 { process.stop() }
}
