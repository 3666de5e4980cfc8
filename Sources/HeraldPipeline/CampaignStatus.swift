import Foundation
import HeraldCore
import HeraldState

/// What `herald status` shows: every run of the job in its state file, and whether a run is
/// going on right now. Read-only: safe beside a running campaign (WAL readers never block it),
/// except on a network volume, where the run holds the file (StateVolume.network) and this waits, then fails.
public struct CampaignStatus: Sendable {
    public struct Run: Sendable {
        public var info: RunInfo
        public var counts: [StoredStatus: Int]
        public var invalid: Int
        public var distinct: Int
        public var lastActivity: String?
        public var reportsDir: String
        /// When the next recipient waiting for its local window (`schedule`) is due, if one waits.
        public var nextDue: Date? = nil
        /// Of the `scheduled` recipients, those waiting for a frequency-cap slot, not a window.
        public var capped = 0
        /// `experiment`: recipients per arm and status (empty without one).
        public var experiment: [VariantCount] = []
        /// Many apps: recipients per app, environment and status (empty without them).
        public var apps: [AppCount] = []
    }

    public var statePath: String
    public var runs: [Run]
    /// The pid of the `herald run` holding the campaign's lock, if any.
    public var lockHolder: Int?
    /// The job's events sinks (`events`): what each took and what waits for it in the outbox.
    public var events: [EventSinkState] = []
    /// An operator's hold (`herald pause`, `herald cancel`), if any.
    public var control: CampaignControl? = nil

    public static func read(spec: JobSpec) throws(RunFailure) -> CampaignStatus {
        let holder = CampaignLock.holder(statePath: spec.statePath)
        guard FileManager.default.fileExists(atPath: spec.statePath) else {
            return CampaignStatus(statePath: spec.statePath, runs: [], lockHolder: holder)
        }
        let volume = try CampaignRunner.wrap(.preparing) { () throws(StateVolumeError) in try StateVolume(job: spec) }
        return try CampaignRunner.wrap(.preparing) { () throws(StateError) in
            let store = try StateStore(path: spec.statePath, readOnly: true, volume: volume)
            var runs: [Run] = []
            for info in try store.runs() {
                let state = store.run(info)
                runs.append(Run(info: info, counts: try state.statusCounts(), invalid: try state.invalidRowCount(),
                                distinct: try state.recipientCount(), lastActivity: try state.lastAttemptAt() ?? info.startedAt,
                                reportsDir: CampaignName.resolvePath(spec.reports.dir, campaign: info.campaign, startedAt: info.startDate),
                                nextDue: try state.nextDueTime(), capped: try state.cappedCount(),
                                experiment: spec.experiment == nil ? [] : try state.variantCounts(),
                                apps: spec.isRouted ? try state.appCounts() : []))
            }
            var sinks: [String] = []
            if spec.events?.url != nil { sinks.append("url") }
            if spec.events?.file != nil { sinks.append("file") }
            return CampaignStatus(statePath: spec.statePath, runs: runs, lockHolder: holder, events: try store.eventSinks(sinks),
                                  control: try store.control())
        }
    }
}
