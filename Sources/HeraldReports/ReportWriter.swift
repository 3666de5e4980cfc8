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
    public func write(state: StateStore, campaign: String, run: RunInfo, finishedAt: String?, extra: SummaryExtras = SummaryExtras()) throws -> Summary {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
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

        let invalid = try AtomicFile(path: invalidPath)
        try invalid.write(CSV.line(Self.invalidColumns))
        try state.forEachInvalid { row throws in
            try invalid.write(CSV.line([row.location.file, String(row.location.line), row.reason.rawValue, row.field]))
        }
        try invalid.commit()

        let summary = try Summary.make(state: state, campaign: campaign, run: run, finishedAt: finishedAt, extra: extra)
        let file = try AtomicFile(path: summaryPath)
        try file.write(summary.json)
        try file.commit()
        return summary
    }
}
