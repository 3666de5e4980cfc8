import Foundation
import HeraldCore
import HeraldReports
import HeraldState

/// `herald report <job>`: every report of a run written again from its state file, at any time.
/// Read-only on the state file and without the campaign's lock, so it is safe beside a running
/// campaign (SQLite WAL: the reader sees the last committed batch, the writer is never blocked);
/// report files are replaced by rename, so a reader of the reports never sees half a file.
public enum CampaignReports {
    public struct Written: Sendable {
        public var summary: Summary
        public var directory: String
        public var files: [String]
        /// The run was still going (a `herald run` held the lock) when the reports were taken.
        public var runInProgress: Bool
    }

    /// Regenerates the reports of the job's last run, or of `runId` (a run id or a prefix of one).
    public static func regenerate(spec: JobSpec, runId: String? = nil) throws(RunFailure) -> Written {
        guard FileManager.default.fileExists(atPath: spec.statePath) else {
            throw RunFailure(.usage, "\(spec.statePath): no state file yet: the campaign has never run, so there is nothing to report")
        }
        return try CampaignRunner.wrap(.preparing) { () throws -> Written in
            let store = try StateStore(path: spec.statePath, readOnly: true, volume: StateVolume(job: spec))
            let runs = try store.runs()
            let chosen: RunInfo?
            if let runId {
                chosen = runs.last { $0.runId == runId || $0.runId.hasPrefix(runId) }
                guard chosen != nil else {
                    throw RunFailure(.usage, "\(spec.statePath): no run \(runId); runs: \(runs.map(\.runId).joined(separator: ", "))")
                }
            } else {
                chosen = runs.last
            }
            guard let run = chosen else { throw RunFailure(.usage, "\(spec.statePath): the state file has no run yet") }
            let dir = CampaignName.resolvePath(spec.reports.dir, campaign: run.campaign, startedAt: run.startDate)
            let writer = ReportWriter(directory: dir, compress: spec.reports.compress)
            let summary = try writer.write(state: store.run(run), campaign: run.campaign, run: run, finishedAt: run.finishedAt,
                                           ownsDirectory: false)
            return Written(summary: summary, directory: dir, files: writer.files.names,
                           runInProgress: CampaignLock.holder(statePath: spec.statePath) != nil)
        }
    }
}
