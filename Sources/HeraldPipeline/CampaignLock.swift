import Foundation

/// An OS advisory lock (`flock`) on a side file next to the state file. The kernel releases it when
/// the holder dies, even by SIGKILL, so a crash never leaves a stale lock behind.
final class CampaignLock {
    private let fd: Int32
    let path: String

    init(statePath: String) throws(RunFailure) {
        path = statePath + ".lock"
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
}
