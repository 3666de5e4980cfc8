import HeraldAudience
import HeraldCore
import HeraldDelivery
import HeraldJob
import HeraldOperations
import HeraldPayload
import HeraldReports
import HeraldState

/// `herald run`'s exit codes, a contract with cron, systemd and CI (docs/operations.md).
public enum ExitStatus: Int32, Sendable {
    /// Every recipient reached a final state.
    case finished = 0
    /// Usage, configuration or audience error before anything was sent.
    case usage = 2
    /// Aborted by a fatal APNs error (auth, topic): fix the configuration and rerun.
    case aborted = 3
    /// Incomplete (signal, retries exhausted, deadline, a full disk): rerun the same command to resume.
    case incomplete = 4
    /// Too many invalid audience rows.
    case tooManyInvalid = 5
    /// An operator paused or cancelled the campaign (`herald pause`, `herald cancel`): the run
    /// stopped, or did not start. Not 4: rerunning alone does not resume a paused campaign
    /// (`herald resume` does), and a cancelled one never sends again.
    case stopped = 6
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
        case .stopped: return "paused or cancelled by an operator"
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

/// Where a failure happened. The same error means something else before the first push (the
/// job or its files need a person: exit 2) than once sending has begun (what was recorded
/// stands, a rerun resumes: exit 4).
public enum RunStage: Sendable {
    /// Loading the job, opening the state file, reading and recording the audience.
    case preparing
    /// Claiming, sending and recording answers.
    case sending
    /// Writing the reports from the state file.
    case reporting
}

extension RunFailure {
    /// The one place that decides what a failure means to the operator: its exit status and
    /// the message that says what to do.
    ///
    /// A storage failure (full disk or quota, I/O error, read-only file system) is exit 4 at
    /// every stage: SQLite rolls back the transaction it could not write, so nothing recorded
    /// is lost, and the same command resumes once the disk has room. The message names the file
    /// and says it is the disk, not the job.
    public init(_ error: any Error, during stage: RunStage) {
        switch error {
        case let failure as RunFailure:
            self = failure
        case CampaignLockError.busy:
            self.init(.locked, "\(error)")
        case let lock as CampaignLockError:
            self = Self.storage(lock.storageFailure, file: lock.description, detail: "locking the campaign") ?? RunFailure(.usage, lock.description)
        case StateVolumeError.unreadable(let state):
            self.init(state, during: stage)
        case is StateVolumeError:
            // A state directory on a network filesystem the job has not accepted: the job or the volume needs a person.
            self.init(.usage, "\(error)")
        case let state as StateError:
            self = Self.storage(state.storageFailure, file: state.path, detail: state.message) ?? Self.byStage(error, stage)
        case let scratch as ScratchFileError:
            self = Self.storage(StorageFailure(errno: scratch.code), file: "temporary files", detail: scratch.description) ?? Self.byStage(error, stage)
        case let report as ReportError:
            self = Self.storage(StorageFailure(errno: report.errno), file: report.path, detail: report.why) ?? Self.byStage(error, stage)
        case let channel as ChannelManagementClient.Failure:
            // Channel management answers read through the one reason table: the app's
            // configuration (key, topic, broadcast capability) or a full channel quota needs a
            // person (3); no answer or a 429/5xx is worth trying again (4); anything else is a
            // request that cannot succeed as given, an unknown channel id say (2).
            switch channel.action {
            case .abortCampaign: self.init(.aborted, "\(channel)")
            case .retryAfterDelay, .retryOnNewConnection, .refreshTokenAndRetry: self.init(.incomplete, "\(channel); try again")
            case .permanent:
                if case .rejected(_, let reason, _) = channel, reason == "CannotCreateChannelConfig" {
                    self.init(.aborted, "\(channel)")
                } else {
                    self.init(.usage, "\(channel)")
                }
            }
        case is JobError, is AudienceError, is PayloadTemplateError, is DeliveryError, is ShardError, is EventsError:
            // The job, its audience, its template or its key: a person fixes them, a rerun alone would fail again.
            self.init(.usage, "\(error)")
        default:
            // Foundation's file errors (creating a folder) carry the POSIX code of the failure.
            self = Self.storage(StateError.posixCode(of: error).flatMap(StorageFailure.init(errno:)), file: "\(error)", detail: "")
                ?? Self.byStage(error, stage)
        }
    }

    private static func byStage(_ error: any Error, _ stage: RunStage) -> RunFailure {
        switch stage {
        case .preparing: return RunFailure(.usage, "\(error)")
        case .sending, .reporting: return RunFailure(.incomplete, "\(error)")
        }
    }

    private static func storage(_ failure: StorageFailure?, file: String, detail: String) -> RunFailure? {
        guard let failure else { return nil }
        let why = detail.isEmpty ? failure.explanation : "\(failure.explanation) (\(detail))"
        return RunFailure(.incomplete, "\(file): \(why). This is the disk, not the job: nothing recorded is lost; "
                          + "make room or fix the file system, then rerun the same command to resume")
    }
}
