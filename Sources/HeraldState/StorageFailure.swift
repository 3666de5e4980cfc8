import Foundation
import GRDB

/// The storage under a file failed: the disk or quota is full, an I/O error, a read-only file
/// system. Not the job's fault and not the file's contents: SQLite rolls back the transaction it
/// could not write, so nothing committed is lost, and the same command run again once the
/// storage is fixed resumes.
public enum StorageFailure: Sendable, Equatable {
    case full, io, readOnly

    /// From SQLite's primary result code (https://sqlite.org/rescode.html): SQLITE_FULL is
    /// "a write could not complete because the disk is full", SQLITE_IOERR "the operating system
    /// reported an I/O error", SQLITE_READONLY "an attempt to alter data with no write permission".
    public init?(sqliteCode: Int32) {
        switch sqliteCode {
        case ResultCode.SQLITE_FULL.rawValue: self = .full
        case ResultCode.SQLITE_IOERR.rawValue: self = .io
        case ResultCode.SQLITE_READONLY.rawValue: self = .readOnly
        default: return nil
        }
    }

    /// From the `errno` of a failed file operation outside SQLite.
    public init?(errno: Int32) {
        switch errno {
        case ENOSPC, EDQUOT, EFBIG: self = .full
        case EIO: self = .io
        case EROFS: self = .readOnly
        default: return nil
        }
    }

    /// In the words an operator needs.
    public var explanation: String {
        switch self {
        case .full: return "the disk (or quota) is full"
        case .io: return "the disk reported an I/O error"
        case .readOnly: return "the file system or the file is read-only"
        }
    }
}
