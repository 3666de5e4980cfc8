import Foundation

/// A fresh directory per test, removed when the value is released.
public final class TemporaryDirectory: @unchecked Sendable {
    // @unchecked: `url` is immutable; the class exists only for deinit cleanup.
    public let url: URL

    public init(_ label: String = "herald-test") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    public var path: String { url.path }

    public func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String {
        let p = file(name)
        try FileManager.default.createDirectory(atPath: (p as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: p))
        return p
    }

    /// Writes `text` gzip-compressed with the system's gzip (real gzip files, not a fake).
    @discardableResult
    public func writeGzip(_ name: String, _ text: String) throws -> String {
        let plain = try write(name + ".plain", text)
        let out = file(name)
        let result = try ProcessRunner.run("/bin/sh", ["-c", "gzip -c '\(plain)' > '\(out)'"])
        guard result.status == 0 else { throw TestSupportError("gzip failed: \(result.stderr)") }
        try FileManager.default.removeItem(atPath: plain)
        return out
    }
}

public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ d: String) { description = d }
}
