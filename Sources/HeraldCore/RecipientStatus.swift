/// A recipient's status as reports show it. Raw values are frozen report values.
public enum RecipientStatus: String, Sendable, CaseIterable {
    case sent, failed, suppressed, throttled, pending
    /// Not sent because an operator cancelled the campaign (`herald cancel`).
    case cancelled
    /// In an experiment's holdout group: never sent, to measure the campaign's lift.
    case heldOut = "held_out"
    /// Outside an experiment's test, waiting for the winner (`experiment.winner`, `--winner`).
    case awaitingWinner = "awaiting_winner"
}

extension RecipientStatus {
    /// Only an experiment's recipients have it: a campaign without one shows it nowhere.
    public var isExperimentOnly: Bool { self == .heldOut || self == .awaitingWinner }
}
