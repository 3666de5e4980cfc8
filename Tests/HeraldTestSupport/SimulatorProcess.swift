import Foundation
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
    /// `arguments`: its other flags (faults, token rules, `--client-ca`).
    public init(in dir: TemporaryDirectory, trusting key: TestKey? = nil, bundleId: String = "com.example.app",
                log: String? = nil, management: Bool = false, arguments: [String] = []) throws {
        try FileManager.default.createDirectory(atPath: dir.file("sim"), withIntermediateDirectories: true)
        caFile = dir.file("sim/ca.pem")
        self.log = log ?? dir.file("sim/requests.ndjson")
        var args = ["sim", "--port", "0"] + (management ? ["--management-port", "0"] : [])
        if let key {
            args += ["--team-id", TestKey.teamId, "--key-id", TestKey.keyId, "--auth-public-key", try dir.write("sim/pub.pem", key.publicKeyPEM)]
        }
        args += ["--bundle-id", bundleId, "--ca-out", caFile, "--log", self.log] + arguments
        process = try Herald().start(args)
        url = String(try process.waitForLine(prefix: "listening on ").dropFirst("listening on ".count))
        port = try #require(URL(string: url)?.port, "the simulator's URL: \(url)")
        managementPort = management
            ? try #require(URL(string: String(try process.waitForLine(prefix: "channel management on ").dropFirst("channel management on ".count)))?.port)
            : nil
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
