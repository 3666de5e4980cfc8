import Foundation
import HeraldCore
import HeraldState

/// What a run does about an operator's hold (`herald pause`, `herald cancel`; CampaignControl).
extension CampaignRunner {
    /// A paused campaign's run ends before it reads the audience or connects to APNs.
    func pausedBeforeStart(_ hold: CampaignControl) -> RunFailure {
        RunFailure(.stopped, "campaign \(spec.campaign) is \(hold.description): nothing sent. "
                   + "`herald resume \(spec.jobFile)` lets the next run continue where it stopped")
    }

    /// The message of a cancelled campaign that has nothing left to record.
    func cancelledAlready(_ hold: CampaignControl) -> String {
        "campaign \(spec.campaign) was \(hold.description): nothing sent. A cancelled campaign stays cancelled; "
            + "to send again, give the job a new campaign name (campaign:)"
    }

    /// Ends a run held by `hold` once its send stage has stopped (or, cancelled before this
    /// invocation, without sending): a pause leaves every recipient as it is; a cancellation reads
    /// what is left of the audience without sending (so the reports list everyone) and records every
    /// recipient not final yet as `cancelled`, in the state file's transactions, with their events.
    func settle(_ hold: CampaignControl, state: RunState, renderer: RecipientRenderer, apnsIdSeed: String) throws(RunFailure) -> RunFailure {
        switch hold.action {
        case .paused:
            let open = try Self.wrap(.sending) { () throws(StateError) in try state.openCount() }
            return RunFailure(.stopped, "campaign \(spec.campaign) \(hold.description): stopped after the requests in flight, "
                              + "\(DecimalDigits.grouped(open)) recipient(s) not final yet. `herald resume \(spec.jobFile)` lets the next run continue")
        case .cancelled:
            var cancelled = try Self.wrap(.sending) { () throws(StateError) in try state.cancelRemaining(hold) }
            let run = try Self.wrap(.sending) { () throws(StateError) in try state.reload() }
            if !run.ingestComplete {
                logger.notice("cancelled: reading the rest of the audience to record it as cancelled (nothing is sent)")
                // The stop that brought the run here must not stop this reading.
                stopRequested.store(false, ordering: .relaxed)
                if !(spec.push.broadcast?.channels.isEmpty ?? true) {
                    try ingestListedChannels(into: state, run: run, renderer: renderer, apnsIdSeed: apnsIdSeed)
                } else {
                    try ingest(into: state, run: run, renderer: renderer, apnsIdSeed: apnsIdSeed)
                }
                cancelled += try Self.wrap(.sending) { () throws(StateError) in try state.cancelRemaining(hold) }
            }
            return RunFailure(.stopped, "campaign \(spec.campaign) \(hold.description): \(DecimalDigits.grouped(cancelled)) recipient(s) not sent are recorded as "
                              + "cancelled, and no later run sends anything. To send again, give the job a new campaign name (campaign:)")
        }
    }
}
