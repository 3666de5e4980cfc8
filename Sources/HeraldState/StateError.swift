import Foundation
import GRDB
import HeraldCore

/// A state-file failure. Carries SQLite's result codes and message and the statement, never its
/// arguments (device tokens are personal data), so a caller can tell a full disk or an I/O error
/// from a constraint or a file that is not herald's.
public struct StateError: Error, CustomStringConvertible {
    /// The SQLite file (state file or the shared file beside it).
    public let path: String
    public let message: String
    /// SQLite's primary result code (`SQLITE_FULL` is 13), when SQLite reported the failure.
    /// https://sqlite.org/rescode.html
    public let sqliteCode: Int32?
    /// SQLite's extended result code (`SQLITE_IOERR_FSYNC` is 1034), when SQLite reported one.
    public let extendedCode: Int32?
    /// The `errno` of a failed file operation outside SQLite (creating the file or its folder,
    /// writing a scratch file of the duplicate sort).
    public let errno: Int32?

    public var description: String { "state file \(path): \(message)" }

    public init(path: String, message: String, errno: Int32? = nil, sqliteCode: Int32? = nil) {
        self.path = path
        self.message = message
        self.sqliteCode = sqliteCode
        self.extendedCode = sqliteCode
        self.errno = errno
    }

    init(path: String, _ error: any Error) {
        self.path = path
        switch error {
        case let e as DatabaseError:
            var m = "SQLite error \(e.resultCode.rawValue): \(e.message ?? "unknown")"
            if let sql = e.sql { m += " - while executing `\(sql)`" }
            message = m
            sqliteCode = e.resultCode.primaryResultCode.rawValue
            extendedCode = e.extendedResultCode.rawValue
            errno = nil
        case let e as StateError:
            message = e.message
            sqliteCode = e.sqliteCode
            extendedCode = e.extendedCode
            errno = e.errno
        case let e as ScratchFileError:
            message = e.description
            sqliteCode = nil
            extendedCode = nil
            errno = e.code
        default:
            message = String(describing: error)
            sqliteCode = nil
            extendedCode = nil
            errno = Self.posixCode(of: error)
        }
    }

    /// The storage under the file failed, not the job or the file's contents (nil otherwise).
    public var storageFailure: StorageFailure? {
        if let sqliteCode, let failure = StorageFailure(sqliteCode: sqliteCode) { return failure }
        return errno.flatMap(StorageFailure.init(errno:))
    }

    /// The POSIX code inside a Foundation file error (creating the state folder), if any.
    public static func posixCode(of error: any Error) -> Int32? {
        let ns = error as NSError
        if ns.domain == NSPOSIXErrorDomain { return Int32(ns.code) }
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return Int32(underlying.code)
        }
        switch CocoaError.Code(rawValue: ns.code) {
        case .fileWriteOutOfSpace where ns.domain == NSCocoaErrorDomain: return ENOSPC
        case .fileWriteVolumeReadOnly where ns.domain == NSCocoaErrorDomain: return EROFS
        default: return nil
        }
    }
}
