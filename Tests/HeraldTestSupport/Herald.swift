import Foundation
import Testing

/// The built `herald` binary (`ProcessRunner.heraldBinary`) as an end-to-end test runs it: from
/// `/` as cron would (every path it is given is absolute, and a job's own paths are relative to
/// the job file), with the test's environment plus `environment` (a nil value unsets a variable).
///
///     let herald = Herald()
///     let r = try herald.run(job)                        // herald run <job>
///     #expect(r.status == 0, "\(r.output)")
///     #expect(try r.counts()["sent"] as? Int == 5)
///     let status = try herald(["status", job.path, "--json"])
///     let p = try herald.start(["run", job.path], watch: .stderr, environment: ["HERALD_TEST_STALL_AT": "send:1"])
public struct Herald: Sendable {
    public var environment: [String: String?]
    public var cwd: String

    public init(environment: [String: String?] = [:], cwd: String = "/") {
        self.environment = environment
        self.cwd = cwd
    }

    /// `herald <arguments>` to its end.
    public func callAsFunction(_ arguments: [String], environment: [String: String?] = [:], cwd: String? = nil,
                               job: JobFile? = nil) throws -> RunResult {
        let r = try ProcessRunner.run(ProcessRunner.heraldBinary, arguments, cwd: cwd ?? self.cwd, environment: merged(environment))
        return RunResult(status: r.status, stdout: r.stdout, stderr: r.stderr, job: job)
    }

    /// `herald run <job> <arguments>` to its end; the result reads what the run left.
    public func run(_ job: JobFile, _ arguments: [String] = [], environment: [String: String?] = [:], cwd: String? = nil) throws -> RunResult {
        try self(["run", job.path] + arguments, environment: environment, cwd: cwd, job: job)
    }

    /// `herald <arguments>` in the background: for a process the test signals, kills or reads line by line.
    public func start(_ arguments: [String], watch: BackgroundProcess.Watched = .stdout,
                      environment: [String: String?] = [:]) throws -> BackgroundProcess {
        try BackgroundProcess(ProcessRunner.heraldBinary, arguments, watch: watch, environment: merged(environment))
    }

    /// `herald <arguments>` in the background, its stdout and stderr written to files (nil:
    /// discarded): for a run the test watches by other means and whose output it reads once it ended.
    public func spawn(_ arguments: [String], stdout: String?, stderr: String?, environment: [String: String?] = [:]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ProcessRunner.heraldBinary)
        p.arguments = arguments
        p.environment = merged(environment)
        p.currentDirectoryURL = URL(fileURLWithPath: cwd)
        func file(_ path: String?) throws -> FileHandle {
            guard let path else { return FileHandle.nullDevice }
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            return try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        }
        p.standardOutput = try file(stdout)
        p.standardError = try file(stderr)
        try p.run()
        return p
    }

    /// The test's environment with this runner's and the call's changes.
    func merged(_ call: [String: String?]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        for (name, value) in environment.merging(call, uniquingKeysWith: { _, new in new }) { env[name] = value }
        return env
    }
}

/// What one `herald` command did: its exit status and output, and, when it ran a job, what
/// that job's run left behind (`JobFile`'s readers).
public struct RunResult: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
    public let job: JobFile?

    /// stdout then stderr: for a failed expectation's message.
    public var output: String { stdout + stderr }

    func ran() throws -> JobFile { try #require(job, "this command ran no job") }
    public func summary() throws -> [String: Any] { try ran().summary() }
    public func counts() throws -> [String: Any] { try ran().counts() }
    public func deliveries(gzip: Bool = false) throws -> [[String: String]] { try ran().deliveries(gzip: gzip) }
    public func requests() throws -> [String: [RequestLog.Attempt]] { try ran().requests() }
    /// stdout as one JSON object (`--json`).
    public func json() throws -> [String: Any] { try JSON.object(text: stdout) }
}
