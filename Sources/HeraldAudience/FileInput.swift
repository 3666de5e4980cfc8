#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
internal import HeraldCore

/// The open file descriptor of one audience file and a fixed 64 KiB read buffer.
///
/// POSIX `read` rather than `FileHandle`: no `Data` allocation per chunk, and `errno` is at
/// hand for the operator's message. The buffer feeds zlib for gzip files; plain files are read
/// straight into the caller's window and only the first (sniffed) chunk passes through it.
final class FileInput {
    static let bufferCapacity = 64 * 1024

    let name: String
    let fileSize: Int
    /// Bytes taken from the file so far (read-ahead included).
    private(set) var bytesRead = 0
    private let fd: Int32
    private let buffer: UnsafeMutablePointer<UInt8>
    /// Bytes in `buffer` read from the file but not yet handed out.
    private var pendingStart = 0
    private var pendingEnd = 0
    private var reachedEOF = false

    init(file: AudienceFile) throws(AudienceError) {
        name = file.name
        let fd = open(file.path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            if code == ENOENT { throw .notFound(file: file.name) }
            throw .cannotOpen(file: file.name, reason: Self.errnoText(code))
        }
        var info = stat()
        if fstat(fd, &info) != 0 {
            let code = errno
            close(fd)
            throw .cannotOpen(file: file.name, reason: Self.errnoText(code))
        }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw .cannotOpen(file: file.name, reason: "is a directory")
        }
        self.fd = fd
        fileSize = Int(info.st_size)
        buffer = .allocate(capacity: Self.bufferCapacity)
    }

    deinit {
        close(fd)
        buffer.deallocate()
    }

    /// The first bytes of the file (at least `minimum` unless the file is shorter), kept
    /// pending so that whoever reads next still gets them. Used to look for the gzip magic.
    func sniff(minimum: Int) throws(AudienceError) -> UnsafeBufferPointer<UInt8> {
        while pendingEnd - pendingStart < minimum && !reachedEOF && pendingEnd < Self.bufferCapacity {
            let n = try readFile(into: buffer + pendingEnd, count: Self.bufferCapacity - pendingEnd)
            pendingEnd += n
        }
        return UnsafeBufferPointer(start: buffer + pendingStart, count: pendingEnd - pendingStart)
    }

    /// Copies up to `count` bytes into `destination`; 0 means end of file.
    func read(into destination: UnsafeMutablePointer<UInt8>, count: Int) throws(AudienceError) -> Int {
        if pendingEnd > pendingStart {
            let n = min(count, pendingEnd - pendingStart)
            destination.update(from: buffer + pendingStart, count: n)
            pendingStart += n
            return n
        }
        return try readFile(into: destination, count: count)
    }

    /// The next chunk in the internal buffer, valid until the next call; empty at end of file.
    func nextChunk() throws(AudienceError) -> UnsafeBufferPointer<UInt8> {
        if pendingEnd > pendingStart {
            let chunk = UnsafeBufferPointer(start: buffer + pendingStart, count: pendingEnd - pendingStart)
            pendingStart = pendingEnd
            return chunk
        }
        let n = try readFile(into: buffer, count: Self.bufferCapacity)
        pendingStart = n
        pendingEnd = n
        return UnsafeBufferPointer(start: buffer, count: n)
    }

    private func readFile(into destination: UnsafeMutablePointer<UInt8>, count: Int) throws(AudienceError) -> Int {
        if reachedEOF { return 0 }
        while true {
            let n = posixRead(fd, destination, count)
            if n > 0 {
                bytesRead += n
                return n
            }
            if n == 0 {
                reachedEOF = true
                return 0
            }
            let code = errno
            if code == EINTR { continue }
            throw .readFailed(file: name, offset: bytesRead, reason: Self.errnoText(code))
        }
    }

    static func errnoText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return "\(String(cString: text)) (errno \(code))"
    }
}

/// `read(2)`, under a name that the `read(into:count:)` method above does not shadow.
private func posixRead(_ fd: Int32, _ buffer: UnsafeMutablePointer<UInt8>, _ count: Int) -> Int {
    read(fd, buffer, count)
}
