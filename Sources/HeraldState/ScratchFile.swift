#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the scratch file failed (disk full, temporary directory not writable).
public struct ScratchFileError: Error, CustomStringConvertible {
    public let description: String
    /// The `errno` of the failed call (ENOSPC: the temporary directory's disk is full), 0 if none.
    public let code: Int32
    public init(description: String, code: Int32 = 0) { self.description = description; self.code = code }
}

/// A temporary file that is unlinked as soon as it is created: only its descriptor keeps it,
/// so it is gone when this object or the process is. Holds fixed-size plain values (sorted runs
/// of an external sort).
final class ScratchFile {
    private let fd: Int32
    private var size = 0
    let directory: String

    init(directory: String) throws(ScratchFileError) {
        self.directory = directory
        var template = Array((directory.hasSuffix("/") ? directory : directory + "/").utf8CString.dropLast()) + Array("herald-sort-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw Self.error("cannot create a temporary file in \(directory)") }
        unlink(template)
        self.fd = fd
    }

    deinit { close(fd) }

    /// Appends values; returns where they are.
    func append<T: BitwiseCopyable>(_ keys: [T]) throws(ScratchFileError) -> SortedRun {
        let run = SortedRun(offset: size, count: keys.count)
        let failed = keys.withUnsafeBytes { bytes -> Bool in
            var done = 0
            while done < bytes.count {
                let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(size + done))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return true }
                done += n
            }
            return false
        }
        if failed { throw Self.error("cannot write a temporary file in \(directory)") }
        size += keys.count * MemoryLayout<T>.stride
        return run
    }

    /// Replaces `buffer`'s contents with `count` values read from byte `offset`.
    func read<T: BitwiseCopyable>(count: Int, at offset: Int, into buffer: inout [T], filler: T) throws(ScratchFileError) {
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: repeatElement(filler, count: count))
        let failed = buffer.withUnsafeMutableBytes { bytes -> Bool in
            var done = 0
            while done < bytes.count {
                let n = pread(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return true }
                done += n
            }
            return false
        }
        if failed { throw Self.error("cannot read back a temporary file in \(directory)") }
    }

    private static func error(_ what: String) -> ScratchFileError {
        let code = errno
        return ScratchFileError(description: "sorting device tokens: \(what): \(String(cString: strerror(code))) (errno \(code))", code: code)
    }
}
