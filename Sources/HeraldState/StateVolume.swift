import Foundation
import HeraldCore

/// How the SQLite files of one state directory are opened, decided once per command from the
/// filesystem under the directory and the job's `state.network_filesystem`.
public enum StateVolume: Sendable, Equatable {
    /// A local filesystem: WAL with its shared-memory index, so `herald status` and
    /// `herald report` read beside a run and campaigns share `herald-shared.sqlite` at once.
    case local
    /// A network filesystem the job accepted (`exclusive`): the state file in WAL mode with
    /// `locking_mode=EXCLUSIVE`, so its WAL index lives in the run's heap and no `-shm` file is
    /// ever made, and `herald-shared.sqlite` in rollback-journal mode (see SQLiteFile.Journal).
    case network(Filesystem)

    /// The volume of the job's state directory, or the refusal of a network filesystem the job
    /// has not accepted.
    public init(job: JobSpec) throws(StateVolumeError) {
        let dir = (job.statePath as NSString).deletingLastPathComponent
        let filesystem: Filesystem
        do { filesystem = try Filesystem.of(path: dir.isEmpty ? "." : dir) } catch { throw .unreadable(error) }
        guard filesystem.isNetwork else { self = .local; return }
        switch job.stateNetworkFilesystem {
        case .refuse: throw .refused(directory: dir, filesystem: filesystem, jobFile: job.jobFile)
        case .exclusive: self = .network(filesystem)
        }
    }

    /// SQLite's journal for a campaign's state file on this volume.
    var stateJournal: SQLiteFile.Journal { self == .local ? .wal : .walExclusive }
    /// SQLite's journal for `herald-shared.sqlite` on this volume.
    var sharedJournal: SQLiteFile.Journal { self == .local ? .wal : .rollback }
}

/// Why a state directory cannot be used as the job stands (exit 2: the job or the volume needs a person).
public enum StateVolumeError: Error, CustomStringConvertible {
    /// On a network filesystem, and the job did not set `state.network_filesystem: exclusive`.
    case refused(directory: String, filesystem: Filesystem, jobFile: String)
    /// statfs(2) failed on the directory.
    case unreadable(StateError)

    public var description: String {
        switch self {
        case .refused(let directory, let filesystem, let jobFile):
            return "state directory \(directory) is on a network filesystem (\(filesystem)): herald's SQLite files use WAL mode, "
                + "which does not work over a network filesystem (https://www.sqlite.org/wal.html). Put the state directory on a "
                + "local disk or a volume only this host mounts (a ReadWriteOnce volume), or, if only this host uses the directory, "
                + "set `state: { network_filesystem: exclusive }` in \(jobFile); see docs/operations.md#state-on-a-network-filesystem"
        case .unreadable(let error): return "\(error)"
        }
    }
}
