/// `herald run`'s exit codes, a contract with cron and CI (README: "Exit codes").
public enum ExitStatus: Int32, Sendable {
    /// Every recipient reached a final state.
    case finished = 0
    /// Usage, configuration or audience error before anything was sent.
    case usage = 2
    /// Aborted by a fatal APNs error (auth, topic): fix the configuration and rerun.
    case aborted = 3
    /// Incomplete (signal, retries exhausted, deadline): rerun the same command to resume.
    case incomplete = 4
    /// Too many invalid audience rows.
    case tooManyInvalid = 5
    /// Another run holds the campaign's lock (EX_TEMPFAIL).
    case locked = 75
}

extension ExitStatus {
    /// What the code means, for the one-line result.
    public var meaning: String {
        switch self {
        case .finished: return "finished"
        case .usage: return "configuration or audience error; nothing more was sent"
        case .aborted: return "aborted by a fatal APNs error; fix the configuration and rerun"
        case .incomplete: return "incomplete; rerun the same command to resume"
        case .tooManyInvalid: return "too many invalid rows"
        case .locked: return "another run holds the campaign's lock"
        }
    }
}

/// A failure that ends the run with a given exit status and an operator message.
public struct RunFailure: Error, CustomStringConvertible {
    public let status: ExitStatus
    public let message: String
    public init(_ status: ExitStatus, _ message: String) { self.status = status; self.message = message }
    public var description: String { message }
}
