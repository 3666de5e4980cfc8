/// A recipient's status as reports show it. Raw values are frozen report values.
public enum RecipientStatus: String, Sendable, CaseIterable {
    case sent, failed, suppressed, throttled, pending
    /// Not sent because an operator cancelled the campaign (`herald cancel`).
    case cancelled
}
