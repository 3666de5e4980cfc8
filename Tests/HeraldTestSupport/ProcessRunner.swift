import Foundation

/// Runs a program to completion and captures its output (end-to-end tests run the built binary).
public enum ProcessRunner {
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    public static func run(_ executable: String, _ arguments: [String], cwd: String? = nil,
                           environment: [String: String]? = nil) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        if let cwd { p.currentDirectoryURL = URL(fileURLWithPath: cwd) }
        if let environment { p.environment = environment }
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // Read both pipes concurrently with the process so a chatty child cannot block on a full pipe.
        let errData = LockedData()
        let errRead = DispatchSemaphore(value: 0)
        let reader = Thread {
            errData.set(err.fileHandleForReading.readDataToEndOfFile())
            errRead.signal()
        }
        reader.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        errRead.wait()
        return Result(status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData.value, as: UTF8.self))
    }

    /// The package root (for `samples/`, `jobs/` and the built binary).
    public static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The `herald` binary `HERALD_BINARY` names, else the one built beside the running tests
    /// (`swift build --build-tests`, which `make test` runs first; with `--scratch-path` that is
    /// the scratch path's), else the one in `.build/debug` or `.build/release`.
    public static var heraldBinary: String {
        if let named = ProcessInfo.processInfo.environment["HERALD_BINARY"], !named.isEmpty { return named }
        let beside = Bundle.main.executableURL.map { $0.deletingLastPathComponent().appendingPathComponent("herald").path }
        let candidates = [".build/debug/herald", ".build/release/herald"].map { packageRoot.appendingPathComponent($0).path }
        return ([beside].compactMap { $0 } + candidates).first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
    }
}

final class LockedData: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private let lock = NSLock()
    private var data = Data()
    func set(_ d: Data) { lock.lock(); data = d; lock.unlock() }
    var value: Data { lock.lock(); defer { lock.unlock() }; return data }
}
