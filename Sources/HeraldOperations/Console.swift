#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// stderr, shared by log lines and the progress line. A log line first erases the progress line
/// (`\r` + erase-to-end-of-line) and the next tick draws it again, so the two never garble each
/// other on a terminal. Writes are whole lines under one lock: concurrent loggers never interleave.
public final class Console: Sendable {
    public static let standardError = Console(fd: STDERR_FILENO)

    private let fd: Int32
    /// The progress line currently shown (nil: none; the cursor is at the start of a fresh line).
    private let status = Mutex<String?>(nil)

    public init(fd: Int32) { self.fd = fd }

    /// True when the descriptor is a terminal: the progress line may redraw itself in place.
    public var isTerminal: Bool { isatty(fd) == 1 }

    /// Columns of the terminal, for keeping the progress line on one row (a wrapped line cannot be
    /// redrawn with `\r`); nil when not a terminal.
    public var columns: Int? {
        var size = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// Writes one line (a newline is added), keeping a shown progress line below it.
    public func writeLine(_ text: String) {
        status.withLock { shown in
            var out = shown == nil ? "" : "\r\u{1B}[K"
            out += text + "\n"
            if let shown { out += shown }
            write(out)
        }
    }

    /// Shows `line` in place of the current progress line; nil erases it.
    public func setStatus(_ line: String?) {
        status.withLock { shown in
            guard shown != nil || line != nil else { return }
            write("\r\u{1B}[K" + (line ?? ""))
            shown = line
        }
    }

    private func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = posixWrite(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
            }
        }
    }
}

/// `write(2)`, under a name the `write(_:)` method above does not shadow.
func posixWrite(_ fd: Int32, _ buffer: UnsafePointer<UInt8>, _ count: Int) -> Int {
    write(fd, buffer, count)
}
