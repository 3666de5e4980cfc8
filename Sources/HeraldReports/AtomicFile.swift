import Foundation

/// A report file written to a temporary name and renamed into place, so a reader (or a crash)
/// never sees half a report. Created 0600: reports hold device tokens, which are personal data.
/// The metrics file is written the same way, 0644 (it holds counts only, and node_exporter runs
/// as another user); the temporary name (`<name>.tmp-<pid>`) never ends in `.prom`.
public final class AtomicFile {
    let path: String
    private let tempPath: String
    private let fd: Int32
    private var buffer = RowBuffer(capacity: 1 << 17)
    private var closed = false
    /// Set for `reports.compress`: what is written goes through gzip.
    private let deflater: GzipDeflater?

    public init(path: String, gzip: Bool = false, mode: mode_t = 0o600) throws(ReportError) {
        self.path = path
        self.tempPath = path + ".tmp-\(getpid())"
        deflater = gzip ? try GzipDeflater(path: path) : nil
        let fd = open(tempPath, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, mode)
        guard fd >= 0 else { throw ReportError(path: path, errno: errno) }
        fchmod(fd, mode)   // whatever the umask says
        self.fd = fd
    }

    deinit {
        if !closed { close(fd); unlink(tempPath) }
    }

    public func write(_ text: String) throws(ReportError) {
        buffer.append(text)
        if buffer.count >= 1 << 16 { try flush() }
    }

    /// Appends bytes straight into the write buffer (report rows, without a String per row).
    func append(_ body: (inout RowBuffer) -> Void) throws(ReportError) {
        body(&buffer)
        if buffer.count >= 1 << 16 { try flush() }
    }

    private func flush(finish: Bool = false) throws(ReportError) {
        if let deflater {
            let packed = try deflater.deflate(buffer.bytes, finish: finish, path: path)
            let failure = packed.withUnsafeBytes { b -> ReportError? in
                do throws(ReportError) { try writeAll(b); return nil } catch { return error }
            }
            if let failure { throw failure }
        } else {
            try writeAll(buffer.bytes)
        }
        buffer.removeAll()
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws(ReportError) {
        var offset = 0
        while offset < bytes.count {
            let n = Foundation.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw ReportError(path: path, errno: errno)
            }
            offset += n
        }
    }

    /// Flushes, fsyncs and renames into place.
    public func commit() throws(ReportError) {
        try flush(finish: true)
        guard fsync(fd) == 0 else { throw ReportError(path: path, errno: errno) }
        close(fd)
        closed = true
        guard rename(tempPath, path) == 0 else {
            let code = errno
            unlink(tempPath)
            throw ReportError(path: path, errno: code)
        }
    }
}

public struct ReportError: Error, CustomStringConvertible {
    public let path: String
    public let why: String
    /// The `errno` of the failed call (ENOSPC: the disk is full), 0 when the failure was not a system call's.
    public let errno: Int32
    public var description: String { "cannot write report \(path): \(why)" }

    public init(path: String, why: String, errno: Int32 = 0) { self.path = path; self.why = why; self.errno = errno }

    /// A failed system call, described by its `errno`.
    init(path: String, errno code: Int32) { self.init(path: path, why: String(cString: strerror(code)), errno: code) }
}

enum CSV {
    /// RFC 4180 quoting: fields with a comma, quote, CR or LF are quoted, quotes doubled.
    static func field(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func line(_ fields: [String]) -> String { fields.map(field).joined(separator: ",") + "\n" }
}

extension CSV {
    /// Splits one RFC 4180 line (no embedded newlines) into its fields.
    static func split(_ line: String) -> [String] {
        var fields: [String] = []
        var field = ""
        var quoted = false
        var chars = Array(line.unicodeScalars)[...]
        while let c = chars.popFirst() {
            if quoted {
                if c == "\"" {
                    if chars.first == "\"" { field.unicodeScalars.append("\""); chars.removeFirst() } else { quoted = false }
                } else { field.unicodeScalars.append(c) }
            } else if c == "\"" {
                quoted = true
            } else if c == "," {
                fields.append(field); field = ""
            } else {
                field.unicodeScalars.append(c)
            }
        }
        fields.append(field)
        return fields
    }
}
