import Foundation
import HeraldAudience
import HeraldCore

/// A per-test temporary directory with real audience files in it, removed when the test ends.
final class AudienceFixture {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-audience-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// Writes `bytes` as `name`; the AudienceFile's name is the bare file name, as a job would write it.
    func write(_ name: String, _ bytes: [UInt8]) throws -> AudienceFile {
        let url = directory.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return AudienceFile(name: "samples/\(name)", path: url.path)
    }

    func write(_ name: String, _ text: String) throws -> AudienceFile {
        try write(name, Array(text.utf8))
    }

    /// Real gzip bytes from gzip(1) (`-n`: no name or time stamp, so the header is 10 bytes).
    func gzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let source = directory.appendingPathComponent("gzip-input-\(UUID().uuidString)")
        try Data(bytes).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-c", "-n", source.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw FixtureError.gzipFailed(process.terminationStatus) }
        return Array(data)
    }

    func gzip(_ text: String) throws -> [UInt8] { try gzip(Array(text.utf8)) }

    enum FixtureError: Error { case gzipFailed(Int32) }
}

/// Every event of a file, in order.
func readAll(_ file: AudienceFile, spec: AudienceSpec = AudienceSpec(files: [])) throws(AudienceError) -> [AudienceEvent] {
    let reader = try AudienceFileReader(file: file, spec: spec)
    var events: [AudienceEvent] = []
    while let event = try reader.next() { events.append(event) }
    return events
}

/// The error a file's reading stops with, or nil if it reads to the end.
func readError(_ file: AudienceFile, spec: AudienceSpec = AudienceSpec(files: [])) -> AudienceError? {
    do {
        _ = try readAll(file, spec: spec)
        return nil
    } catch {
        return error
    }
}

extension AudienceEvent {
    var record: AudienceRecord? {
        if case .record(let r) = self { return r }
        return nil
    }
    var invalid: InvalidRow? {
        if case .invalid(let r) = self { return r }
        return nil
    }
    var line: Int {
        switch self {
        case .record(let r): return r.location.line
        case .invalid(let r): return r.location.line
        }
    }
}

/// A plausible 32-byte token: `seed` repeated to 64 hex digits.
func token(_ seed: String) -> String {
    String(repeating: seed, count: 64 / seed.count)
}
