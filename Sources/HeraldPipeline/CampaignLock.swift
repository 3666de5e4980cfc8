import Foundation
import HeraldState

/// Why the campaign's lock could not be taken.
public enum CampaignLockError: Error, CustomStringConvertible {
    /// Another run holds it (exit 75).
    case busy(path: String)
    /// The state folder or the lock file could not be made or locked; `errno` (0 if unknown) says why.
    case unusable(message: String, errno: Int32)

    public var description: String {
        switch self {
        case .busy(let path): return "another herald run holds the lock on this campaign (\(path)); not starting"
        case .unusable(let message, _): return message
        }
    }

    /// A full or read-only disk under the state folder, not a mistake in the job.
    public var storageFailure: StorageFailure? {
        if case .unusable(_, let code) = self { return StorageFailure(errno: code) }
        return nil
    }
}

/// An OS advisory lock (`flock`) on a side file next to the state file. The kernel releases it when
/// the holder dies, even by SIGKILL, so a crash never leaves a stale lock behind.
public final class CampaignLock {
    private let fd: Int32
    let path: String

    init(statePath: String) throws(CampaignLockError) {
        path = Self.path(statePath: statePath)
        let dir = (path as NSString).deletingLastPathComponent
        do { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) } catch {
            throw .unusable(message: "cannot create the state directory \(dir): \(error.localizedDescription)", errno: StateError.posixCode(of: error) ?? 0)
        }
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.unusable("cannot open lock file", path, errno) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { throw .busy(path: path) }
            throw Self.unusable("cannot lock", path, code)
        }
        self.fd = fd
    }

    deinit { flock(fd, LOCK_UN); close(fd) }

    private static func unusable(_ what: String, _ path: String, _ code: Int32) -> CampaignLockError {
        .unusable(message: "\(what) \(path): \(String(cString: strerror(code)))", errno: code)
    }

    /// The side file the lock is taken on: `<state file>.lock`.
    static func path(statePath: String) -> String { statePath + ".lock" }
}

extension CampaignLock {
    /// The pid holding the campaign's lock, if a run holds it. Read from /proc/locks rather than
    /// by trying the lock: a probe, however brief, could make a run starting at that instant
    /// exit 75.
    public static func holder(statePath: String) -> Int? {
        var st = stat()
        guard stat(path(statePath: statePath), &st) == 0,
              let text = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return nil }
        let device = String(format: "%02x:%02x", (st.st_dev >> 8) & 0xfff, (st.st_dev & 0xff) | ((st.st_dev >> 12) & 0xfff00))
        let id = "\(device):\(st.st_ino)"
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            // "1: FLOCK  ADVISORY  WRITE 12345 fd:01:1234567 0 EOF"
            guard f.count >= 6, f[1] == "FLOCK", f[5] == id else { continue }
            return Int(f[4])
        }
        return nil
    }
}
