import Foundation
import Testing

/// The simulator's NDJSON request log (`apns.simulator.log`, `herald sim --log`), as the tests read it.
public enum RequestLog {
    public struct Attempt: Sendable { public var status: Int; public var apnsId: String; public var collapseId: String? }

    /// Lines in the log (memchr over the bytes: the tests poll this while herald runs, so it must
    /// cost next to nothing even in a debug build).
    public static func lineCount(_ path: String) -> Int {
        guard let data = FileManager.default.contents(atPath: path) else { return 0 }
        return data.withUnsafeBytes { raw -> Int in
            guard var p = raw.baseAddress else { return 0 }
            let end = p + raw.count
            var n = 0
            while p < end, let hit = memchr(p, 0x0A, end - p) {
                n += 1
                p = UnsafeRawPointer(hit) + 1
            }
            return n
        }
    }

    /// Polls until the log has `count` lines or `running` turns false (at most a minute).
    public static func wait(for count: Int, in path: String, while running: () -> Bool) -> Int {
        var seen = 0
        waitUntil(timeout: 60, pollInterval: 0.02) {
            seen = lineCount(path)
            return seen >= count || !running()
        }
        return seen
    }

    public static func read(_ path: String) throws -> [String: [Attempt]] {
        var out: [String: [Attempt]] = [:]
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let headers = o["headers"] as? [String: String] ?? [:]
            out[o["token"] as? String ?? "", default: []].append(
                Attempt(status: o["status"] as? Int ?? 0, apnsId: o["apns_id"] as? String ?? "", collapseId: headers["apns-collapse-id"]))
        }
        return out
    }
}
