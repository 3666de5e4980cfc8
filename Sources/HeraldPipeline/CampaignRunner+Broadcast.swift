import Foundation
import HeraldCore
import HeraldPayload
import HeraldState
import HeraldTestHooks

extension CampaignRunner {
    /// `push.broadcast.channels`: the channels the job lists are the campaign's recipients
    /// (`ListedChannels`). One transaction records them all with the checkpoint past them, so a
    /// rerun after a crash neither reads them twice nor misses one.
    func ingestListedChannels(into state: RunState, run: RunInfo, renderer: RecipientRenderer, apnsIdSeed: String) throws(RunFailure) {
        guard let channels = spec.push.broadcast?.channels, !channels.isEmpty else { return }
        if run.ingestedFile < 1 {   // -1 before the first reading, and after the list changed (a new pass)
            let apnsIds = APNsIdGenerator(seed: apnsIdSeed)
            var batch = IngestBatch()
            for record in ListedChannels.records(of: spec) { accept(.record(record), into: &batch, renderer: renderer, apnsIds: apnsIds) }
            batch.checkpointFile = 1
            batch.checkpointLine = 0
            let recorded = batch
            try Self.wrap(.preparing) { () throws(StateError) in try state.ingest(recorded, pass: run.audiencePass) }
            CrashPoint.ingest.reached()
        }
        try Self.wrap(.preparing) { () throws(StateError) in try state.markIngestComplete(pass: run.audiencePass) }
        logger.info("broadcast to \(channels.count) channel(s) listed in push.broadcast.channels")
    }
}
