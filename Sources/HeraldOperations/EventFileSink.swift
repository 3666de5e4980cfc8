import Foundation

/// `events.file`: each batch appended to an NDJSON file and flushed to the disk (fsync) before it
/// counts as delivered. Created 0600: events carry device tokens.
///
/// Several campaigns (processes) may append to one file, so each batch is written under an
/// exclusive flock(2) on the file, held from the trim of an unfinished line through the append
/// and its fsync: a writer never cuts or joins another's batch, and batches interleave whole.
final class FileSink: EventSink {
    let key = "file"
    let label: String
    private let path: String
    private let fd: Int32
    /// How long a batch waits for another writer's lock before it is tried again later.
    private let lockTimeout: TimeInterval

    init(path: String, lockTimeout: TimeInterval) throws(EventsError) {
        self.path = path
        self.lockTimeout = lockTimeout
        label = "events.file \(path)"
        let dir = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: dir.isEmpty ? "." : dir, withIntermediateDirectories: true)
        } catch {
            throw .file(path: path, message: "cannot create its folder: \(error.localizedDescription)")
        }
        fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .file(path: path, message: String(cString: strerror(errno))) }
    }

    deinit { close(fd) }

    func deliver(_ body: [UInt8]) -> EventSinkResult {
        guard lock() else {
            return .retry("\(path) stayed locked by another writer for \(Int(lockTimeout)) s")
        }
        defer { flock(fd, LOCK_UN) }
        if let failure = cutUnfinishedLine() { return result(failure) }
        let before = lseek(fd, 0, SEEK_END)
        var written = 0
        var failure: Int32 = 0
        body.withUnsafeBytes { raw in
            while written < raw.count {
                let n = write(fd, raw.baseAddress! + written, raw.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                written += n
            }
            if fsync(fd) != 0 { failure = errno }
        }
        guard failure != 0 else { return .delivered }
        // Nothing half-written stays: the batch is appended again whole on the next try. Under
        // the lock, nothing another writer appended can be past `before`.
        if before >= 0 { _ = ftruncate(fd, before) }
        return result(failure)
    }

    /// Takes the file's exclusive lock, waiting up to `lockTimeout` for another writer's batch.
    private func lock() -> Bool {
        let until = Date().addingTimeInterval(lockTimeout)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, Date() < until else { return false }
            usleep(10_000)
        }
        return true
    }

    /// A writer that crashed in the middle of an append can leave a line without its end. Its
    /// event is still in that campaign's outbox (a batch counts only once it is on the disk) and
    /// is written again whole, so the cut line is removed instead of joined to the next one.
    /// Called with the lock held; the errno of a read or truncate that failed.
    private func cutUnfinishedLine() -> Int32? {
        var end = lseek(fd, 0, SEEK_END)
        guard end > 0 else { return end < 0 ? errno : nil }
        var last: UInt8 = 0
        guard pread(fd, &last, 1, end - 1) == 1 else { return errno }
        guard last != UInt8(ascii: "\n") else { return nil }
        var chunk = [UInt8](repeating: 0, count: 4096)
        var keep: off_t = 0
        search: while end > 0 {
            let start = max(0, end - off_t(chunk.count))
            let n = pread(fd, &chunk, Int(end - start), start)
            guard n > 0 else { break }
            for i in stride(from: n - 1, through: 0, by: -1) where chunk[i] == UInt8(ascii: "\n") {
                keep = start + off_t(i) + 1
                break search
            }
            end = start
        }
        return ftruncate(fd, keep) == 0 ? nil : errno
    }

    private func result(_ failure: Int32) -> EventSinkResult {
        let what = "\(path): \(String(cString: strerror(failure)))"
        switch failure {
        case ENOSPC, EDQUOT, EIO, EINTR, EAGAIN: return .retry(what)
        default: return .stop(what)
        }
    }
}
