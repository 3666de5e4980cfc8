import Foundation
import Testing

/// A job `TestJob.write(in:)` wrote, and where its run leaves things: the state file, the
/// reports, the in-process simulator's request log (paths as herald resolves them, from `jobs/`).
public struct JobFile: Sendable {
    public let path: String
    public let job: TestJob
    public let dir: TemporaryDirectory

    /// A path the job names relative to its own directory, made absolute.
    public func resolve(_ relative: String) -> String {
        URL(fileURLWithPath: dir.file("jobs")).appendingPathComponent(relative).standardizedFileURL.path
    }

    public var reportsDir: String { job.reports.dir.map(resolve) ?? dir.file("reports/\(job.campaign)") }
    public var stateFile: String { job.state.file.map(resolve) ?? dir.file("state/\(job.campaign).sqlite") }
    public var requestLog: String { resolve(job.apns.simulator.log ?? "../out/\(job.name).ndjson") }
    public func report(_ file: String) -> String { reportsDir + "/" + file }

    /// The 1-based number of the first line of the job file that contains `text`.
    public func line(of text: String) throws -> Int {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        return try #require(lines.firstIndex { $0.contains(text) }, "\(text) in \(path)") + 1
    }

    // The run's outputs.

    public func summary() throws -> [String: Any] { try JSON.object(report("summary.json")) }
    public func counts() throws -> [String: Any] { try #require(try summary()["counts"] as? [String: Any]) }
    /// deliveries.csv (or its .gz), one dictionary a row.
    public func deliveries(gzip: Bool = false) throws -> [[String: String]] { try CSV.rows(report("deliveries.csv"), gzip: gzip) }
    /// deliveries.ndjson, one object a line.
    public func deliveriesNDJSON() throws -> [[String: Any]] { try JSON.lines(report("deliveries.ndjson")) }
    /// What the simulator answered, by token.
    public func requests() throws -> [String: [RequestLog.Attempt]] { try RequestLog.read(requestLog) }
    /// The simulator's log, one object a request.
    public func requestEntries() throws -> [[String: Any]] {
        FileManager.default.fileExists(atPath: requestLog) ? try JSON.lines(requestLog) : []
    }
    /// Requests the simulator has logged so far (cheap: for polling while herald runs).
    public var sent: Int { RequestLog.lineCount(requestLog) }
}

/// JSON files the tests read: summary.json, NDJSON logs.
public enum JSON {
    public static func object(_ path: String) throws -> [String: Any] {
        let data = try #require(FileManager.default.contents(atPath: path), "\(path) missing")
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    public static func object(text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text.prefix(200))")
    }

    public static func lines(_ path: String) throws -> [[String: Any]] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { try object(text: String($0)) }
    }
}

/// The reports' CSV files.
public enum CSV {
    public static func text(_ path: String, gzip: Bool) throws -> String {
        guard gzip else { return try String(contentsOfFile: path, encoding: .utf8) }
        let r = try ProcessRunner.run("/bin/sh", ["-c", "gzip -dc '\(path).gz'"])
        guard r.status == 0 else { throw TestSupportError("gzip -dc \(path).gz: \(r.stderr)") }
        return r.stdout
    }

    /// Rows of a CSV whose fields hold no commas or quotes (true of the tests' fixtures).
    public static func rows(_ path: String, gzip: Bool = false) throws -> [[String: String]] {
        let lines = try text(path, gzip: gzip).split(separator: "\n").map(String.init)
        let header = lines[0].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        return lines.dropFirst().map { Dictionary(uniqueKeysWithValues: zip(header, $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init))) }
    }
}
