import HeraldCore
import HeraldState

extension CampaignRunner {
    /// `experiment.winner` (or `--winner`) is set: every recipient waiting for it is released to
    /// be sent the winner's payload, in one transaction, before anything is claimed. Test and
    /// holdout recipients keep what they have.
    func releaseWinner(state: RunState) throws(RunFailure) {
        guard let winner = spec.experiment?.winner else { return }
        switch try Self.wrap(.preparing, { () throws(StateError) in try state.releaseWinner(winner) }) {
        case .released(0): return
        case .released(let n):
            logger.notice("experiment winner \(winner): rolling it out to the \(n) recipient(s) outside the test")
        case .missingPayload(let winner, let recipients, let variants):
            throw RunFailure(.usage, "\(spec.jobFile): experiment.winner \(winner) was not a variant when \(recipients) recipient(s) waiting for "
                             + "the winner were read (their staged variants: \(variants.joined(separator: ", "))): choose one of those, "
                             + "or give the changed experiment a new campaign name")
        }
    }

    /// The message of a run whose test is over while recipients wait for the winner (nil: none waits).
    /// The run stays unfinished, so that a later run with a winner sends it as the same campaign;
    /// its exit code is 0, since nothing is left to do until a winner is chosen.
    func awaitingWinner(state: RunState) throws(RunFailure) -> String? {
        guard spec.experiment != nil else { return nil }
        let waiting = try Self.wrap(.sending) { () throws(StateError) in try state.awaitingWinnerCount() }
        guard waiting > 0 else { return nil }
        let names = spec.experiment?.variants.map(\.name).joined(separator: ", ") ?? ""
        return "experiment test finished: \(waiting) recipient(s) await the winner; choose one of \(names) with experiment.winner "
            + "in the job or `herald run \(spec.jobFile) --winner NAME` to send it to them"
    }
}
