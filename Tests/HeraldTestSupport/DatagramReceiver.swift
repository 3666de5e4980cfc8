import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An AF_UNIX datagram socket bound to a path, as systemd's notification socket is.
public final class DatagramReceiver: @unchecked Sendable {
    private let fd: Int32
    private var seen: [String] = []

    public init(path: String) throws {
        unlink(path)
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket() failed") }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard bound == 0 else { throw TestSupportError("bind(\(path)) failed") }
    }

    public var all: [String] { seen }

    /// The first datagram (seen before or arriving within `timeout` seconds) that `matches`.
    public func wait(timeout: TimeInterval, _ matches: (String) -> Bool) -> String? {
        if let hit = seen.first(where: matches) { return hit }
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { continue }
            let message = String(decoding: buffer[0..<n], as: UTF8.self)
            seen.append(message)
            if matches(message) { return message }
        }
        return nil
    }

    public func close() { _ = Glibc.close(fd) }
}
