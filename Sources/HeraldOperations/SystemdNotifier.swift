import Foundation

/// systemd's readiness protocol without libsystemd: datagrams of `KEY=value` lines to the
/// AF_UNIX socket named by `NOTIFY_SOCKET` (https://www.freedesktop.org/software/systemd/man/latest/sd_notify.html:
/// "READY=1", "STATUS=…", "STOPPING=1"; a name starting with "@" is in the abstract namespace).
/// With `Type=notify`, systemd counts the unit started at READY=1 and shows STATUS in
/// `systemctl status`. Without NOTIFY_SOCKET nothing is sent. A datagram that cannot be sent is
/// dropped: the campaign never waits on systemd.
public final class SystemdNotifier: @unchecked Sendable {
    // @unchecked: `ready` and `stopped` are guarded by `lock`; the socket is written whole per datagram.
    private let fd: Int32
    private var address = sockaddr_un()
    private let addressLength: socklen_t
    private let lock = NSLock()
    private var ready = false
    /// After STOPPING=1 the last STATUS stands: progress lines would tell `systemctl status` the
    /// run is sending again while it is winding down.
    private var stopped = false

    /// nil when `environment` has no usable NOTIFY_SOCKET.
    public init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let name = environment["NOTIFY_SOCKET"], !name.isEmpty else { return nil }
        var path = Array(name.utf8)
        if path[0] == UInt8(ascii: "@") { path[0] = 0 } else if path[0] != UInt8(ascii: "/") { return nil }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return nil }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: path) }
        // An abstract name's length counts exactly its bytes; a path is NUL-terminated.
        addressLength = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path[0] == 0 ? 0 : 1))
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
    }

    deinit { close(fd) }

    /// READY=1 (once) with a status line.
    public func ready(status: String) {
        let (first, quiet) = lock.withLock { () -> (Bool, Bool) in
            defer { ready = true }
            return (!ready, stopped)
        }
        if first { send(quiet ? "READY=1" : "READY=1\nSTATUS=\(status)") } else if !quiet { send("STATUS=\(status)") }
    }

    public func status(_ line: String) {
        if !lock.withLock({ stopped }) { send("STATUS=\(line)") }
    }

    /// The run was asked to stop (a signal): it finishes the requests in flight, then exits.
    public func stopping() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        if first { send("STOPPING=1\nSTATUS=stopping after the requests in flight") }
    }

    private func send(_ message: String) {
        let bytes = Array(message.utf8)
        _ = bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &address) { a in
                a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, b.baseAddress, b.count, Int32(MSG_NOSIGNAL), $0, addressLength) }
            }
        }
    }
}
