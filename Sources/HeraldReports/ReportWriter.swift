import Foundation
import HeraldCore
import HeraldState

/// Writes the run's reports from the state file alone, so they can be regenerated at any time and
/// are identical whether the run went straight through or was killed and resumed.
public struct ReportWriter {
    public static let deliveriesColumns = ["file", "line", "recipient_id", "token", "status", "http_status", "reason",
                                           "apns_id", "attempts", "first_attempt_at", "last_attempt_at"]
    public static let invalidColumns = ["file", "line", "reason", "token_field"]

    public let directory: String
    public init(directory: String) { self.directory = directory }

    public var deliveriesPath: String { directory + "/deliveries.csv" }
    public var invalidPath: String { directory + "/invalid.csv" }
    public var summaryPath: String { directory + "/summary.json" }

    /// Writes all three reports and returns the summary that went into summary.json.
    @discardableResult
    public func write(state: RunState, campaign: String, run: RunInfo, finishedAt: String?, extra: SummaryExtras = SummaryExtras()) throws -> Summary {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        removeLeftovers()
        let deliveries = try AtomicFile(path: deliveriesPath)
        try deliveries.write(CSV.line(Self.deliveriesColumns))
        try state.forEachDelivery { d throws in
            try deliveries.write(CSV.line([
                d.file, String(d.line), d.recipientId, d.token, d.status.reportStatus.rawValue,
                d.httpStatus.map(String.init) ?? "", d.reason, d.apnsId, String(d.attempts),
                d.firstAttemptAt ?? "", d.lastAttemptAt ?? "",
            ]))
        }
        try deliveries.commit()
        CrashPoint.report.reached()

        let invalid = try AtomicFile(path: invalidPath)
        try invalid.write(CSV.line(Self.invalidColumns))
        try state.forEachInvalid { row throws in
            try invalid.write(CSV.line([row.location.file, String(row.location.line), row.reason.rawValue, row.field]))
        }
        try invalid.commit()
        CrashPoint.report.reached()

        let summary = try Summary.make(state: state, campaign: campaign, run: run, finishedAt: finishedAt, extra: extra)
        let file = try AtomicFile(path: summaryPath)
        try file.write(summary.json)
        try file.commit()
        return summary
    }

    /// The summary of a run as the state file has it, without writing anything.
    public func summary(state: RunState, run: RunInfo, extra: SummaryExtras = SummaryExtras()) throws -> Summary {
        try Summary.make(state: state, campaign: run.campaign, run: run, finishedAt: run.finishedAt, extra: extra)
    }

    /// The report files, in the order they are written (summary.json last: its presence with the
    /// run's id and end time means the set is complete).
    public var paths: [String] { [deliveriesPath, invalidPath, summaryPath] }

    /// Whether the reports of a finished run are all there: written completely (each is renamed
    /// into place only when whole) for this run.
    public func isComplete(runId: String, finishedAt: String) -> Bool {
        guard paths.allSatisfy({ FileManager.default.fileExists(atPath: $0) }),
              let data = FileManager.default.contents(atPath: summaryPath),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return false }
        return object["run_id"] as? String == runId && object["finished_at"] as? String == finishedAt
    }

    /// Temporary files a killed writer left behind (`<report>.tmp-<pid>`). The caller holds the
    /// campaign's lock, so no live writer owns them.
    func removeLeftovers() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        let reports = paths.map { ($0 as NSString).lastPathComponent + ".tmp-" }
        for name in names where reports.contains(where: { name.hasPrefix($0) }) {
            try? FileManager.default.removeItem(atPath: directory + "/" + name)
        }
    }
}
