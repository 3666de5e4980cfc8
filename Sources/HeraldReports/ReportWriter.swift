import Foundation
import HeraldCore
import HeraldState
import HeraldTestHooks

/// Writes the run's reports from the state file alone, so they can be regenerated at any time
/// (`herald report`) and are identical whether the run went straight through or was killed and
/// resumed: every file is rewritten whole (temporary name, then rename), never appended to.
public struct ReportWriter {
    public static let deliveriesColumns = DeliveryFormat.deliveriesColumns
    public static let invalidColumns = ["file", "line", "reason", "token_field"]

    public let files: ReportFiles
    public var directory: String { files.directory }
    public init(directory: String, compress: Bool = false) { files = ReportFiles(directory: directory, compress: compress) }

    public var deliveriesPath: String { files.deliveriesPath }
    public var invalidPath: String { files.invalidPath }
    public var summaryPath: String { files.summaryPath }

    /// Writes every report and returns the summary that went into summary.json. `ownsDirectory`:
    /// the caller holds the campaign's lock, so temporary files left by a killed writer are
    /// removed (`herald report` beside a running campaign passes false).
    @discardableResult
    public func write(state: RunState, campaign: String, run: RunInfo, finishedAt: String?, extra: SummaryExtras = SummaryExtras(),
                      ownsDirectory: Bool = true) throws -> Summary {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        if ownsDirectory { removeLeftovers() }
        let deliveries = try DeliveryReportWriter(files: files, broadcast: run.broadcast)
        try state.forEachDeliveryColumns { d throws in try deliveries.add(d) }
        try deliveries.commit()

        let invalid = try AtomicFile(path: invalidPath)
        try invalid.write(CSV.line(Self.invalidColumns))
        try state.forEachInvalid { row throws in
            try invalid.write(CSV.line([row.location.file, String(row.location.line), row.reason.rawValue, row.field]))
        }
        try invalid.commit()
        CrashPoint.report.reached()

        let summary = try Summary.make(state: state, campaign: campaign, run: run, finishedAt: finishedAt, extra: extra,
                                       delivery: deliveries.figures)
        try Self.writeSummary(summary, files: files)
        return summary
    }

    /// summary.html, then summary.json (last: it marks the set complete).
    static func writeSummary(_ summary: Summary, files: ReportFiles) throws(ReportError) {
        let page = try AtomicFile(path: files.summaryHTMLPath)
        try page.write(SummaryPage.html(summary))
        try page.commit()
        let file = try AtomicFile(path: files.summaryPath)
        try file.write(summary.json)
        try file.commit()
    }

    /// The summary of a run as the state file has it, without writing anything (no latency or send
    /// rate: those need a pass over every recipient).
    public func summary(state: RunState, run: RunInfo, extra: SummaryExtras = SummaryExtras()) throws -> Summary {
        try Summary.make(state: state, campaign: run.campaign, run: run, finishedAt: run.finishedAt, extra: extra, delivery: nil)
    }

    public var paths: [String] { files.paths }

    /// Whether the reports of a finished run are all there: written completely (each is renamed
    /// into place only when whole) for this run.
    public func isComplete(runId: String, finishedAt: String) -> Bool {
        guard paths.allSatisfy({ FileManager.default.fileExists(atPath: $0) }),
              let data = FileManager.default.contents(atPath: summaryPath),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return false }
        // holdout.csv belongs to the set of a campaign with an experiment only.
        if object["experiment"] is [String: Any], !FileManager.default.fileExists(atPath: files.holdoutPath) { return false }
        return object["run_id"] as? String == runId && object["finished_at"] as? String == finishedAt
    }

    /// Temporary files a killed writer left behind (`<report>.tmp-<pid>`). The caller holds the
    /// campaign's lock, so no live writer owns them.
    func removeLeftovers() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        let reports = files.names.map { $0 + ".tmp-" }
        for name in names where reports.contains(where: { name.hasPrefix($0) }) {
            try? FileManager.default.removeItem(atPath: directory + "/" + name)
        }
    }
}
