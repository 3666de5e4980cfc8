import Foundation

/// A long-running child (e.g. `herald sim`) whose first output line is awaited, then stopped with SIGTERM.
public final class BackgroundProcess: @unchecked Sendable {
    // @unchecked: `process` and `pipe` are set once in init; output is read on the caller's thread only.
    public let process = Process()
    private let pipe = Pipe()

    /// Which output `waitForLine` reads; the other one is discarded.
    public enum Watched: Sendable { case stdout, stderr }

    public init(_ executable: String, _ arguments: [String], watch: Watched = .stdout,
                environment: [String: String?] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        // The test's environment with these changes (a nil value unsets a variable).
        if !environment.isEmpty {
            var env = ProcessInfo.processInfo.environment
            for (name, value) in environment { env[name] = value }
            process.environment = env
        }
        switch watch {
        case .stdout:
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
        case .stderr:
            process.standardOutput = FileHandle.nullDevice
            process.standardError = pipe
        }
        try process.run()
    }

    public var pid: Int32 { process.processIdentifier }

    /// SIGKILL, then reap.
    public func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Reads stdout until a line starting with `prefix` arrives (or the child exits) and returns it.
    public func waitForLine(prefix: String) throws -> String {
        try waitForLine { $0.hasPrefix(prefix) }
    }

    /// Reads the watched output until a line containing `text` arrives (or the child exits) and returns it.
    public func waitForLine(containing text: String) throws -> String {
        try waitForLine { $0.contains(text) }
    }

    /// Read and not yet returned: lines after a match stay here for the next wait (one read may
    /// bring several lines, `listening on` and the line after it, say).
    private var unread = ""

    private func waitForLine(where matches: (Substring) -> Bool) throws -> String {
        let handle = pipe.fileHandleForReading
        while true {
            // Whole lines only: a line still being written is matched once it is complete.
            var lines = unread.split(separator: "\n", omittingEmptySubsequences: false)
            let partial = lines.popLast() ?? ""
            if let i = lines.firstIndex(where: matches) {
                unread = (lines[(i + 1)...] + [partial]).joined(separator: "\n")
                return String(lines[i])
            }
            unread = String(partial)
            let chunk = handle.availableData
            if chunk.isEmpty { throw TestSupportError("process exited before printing the line waited for") }
            unread += String(decoding: chunk, as: UTF8.self)
        }
    }

    public func stop() -> Int32 {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit { if process.isRunning { process.terminate() } }
}
