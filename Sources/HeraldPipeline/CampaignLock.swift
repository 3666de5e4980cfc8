import Foundation

/// An OS advisory lock (`flock`) on a side file next to the state file. The kernel releases it when
/// the holder dies, even by SIGKILL, so a crash never leaves a stale lock behind.
final class CampaignLock {
    private let fd: Int32
    let path: String

    init(statePath: String) throws(RunFailure) {
        path = Self.path(statePath: statePath)
        let dir = (path as NSString).deletingLastPathComponent
        do { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) } catch {
            throw RunFailure(.usage, "cannot create the state directory \(dir): \(error.localizedDescription)")
        }
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw RunFailure(.usage, "cannot open lock file \(path): \(String(cString: strerror(errno)))") }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let busy = errno == EWOULDBLOCK
            close(fd)
            if busy { throw RunFailure(.locked, "another herald run holds the lock on this campaign (\(path)); not starting") }
            throw RunFailure(.usage, "cannot lock \(path): \(String(cString: strerror(errno)))")
        }
        self.fd = fd
    }

    deinit { flock(fd, LOCK_UN); close(fd) }

    /// The side file the lock is taken on: `<state file>.lock`.
    static func path(statePath: String) -> String { statePath + ".lock" }
}

extension CampaignLock {
    /// The pid holding the campaign's lock, if a run holds it. Read from /proc/locks rather than
    /// by trying the lock: a probe, however brief, could make a run starting at that instant
    /// exit 75.
    static func holder(statePath: String) -> Int? {
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
