import Foundation
import Synchronization

/// Instrumentation for the crash tests, off unless `HERALD_TEST_STALL_AT` is set.
///
/// A test that must SIGKILL herald "while it reads the audience" or "while it writes the reports"
/// cannot hit a window of a few milliseconds by timing. With `HERALD_TEST_STALL_AT=ingest:3`
/// (or `send:2`, `report:1`) herald, on reaching the third ingest commit (second send commit,
/// first report file), writes `herald-test: stalled at ingest:3` to stderr and stops there
/// forever, so the test kills it at exactly that point. With `HERALD_TEST_RELEASE_FILE=<path>` too,
/// it writes `herald-test: held at ingest:3` instead and goes on once that file exists, so a test
/// can make two runs overlap for certain (start the second while the first is held). Nothing else
/// changes behaviour.
public enum CrashPoint: String, Sendable {
    /// After an audience batch and its checkpoint are committed.
    case ingest
    /// After a batch of answers is committed.
    case send
    /// After a report file is renamed into place, before the next one.
    case report
    /// After a batch's silent-push ledger entries are committed, before its pushes leave.
    case ledger

    static let target: (CrashPoint, Int)? = {
        guard let value = ProcessInfo.processInfo.environment["HERALD_TEST_STALL_AT"] else { return nil }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let point = CrashPoint(rawValue: String(parts[0])), let n = Int(parts[1]) else { return nil }
        return (point, n)
    }()

    static let counts = Mutex<[CrashPoint: Int]>([:])

    /// Call where the point is reached; stalls forever when the test asked for this occurrence.
    public func reached() {
        guard let (point, n) = Self.target, point == self else { return }
        let count = Self.counts.withLock { counts in
            counts[self, default: 0] += 1
            return counts[self]!
        }
        guard count == n else { return }
        if let release = ProcessInfo.processInfo.environment["HERALD_TEST_RELEASE_FILE"], !release.isEmpty {
            FileHandle.standardError.write(Data("herald-test: held at \(rawValue):\(n)\n".utf8))
            while !FileManager.default.fileExists(atPath: release) { usleep(10_000) }
            return
        }
        FileHandle.standardError.write(Data("herald-test: stalled at \(rawValue):\(n)\n".utf8))
        while true { pause() }
    }
}
