import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// TCP sockets on 127.0.0.1 for the servers tests run: one bound to a port the kernel picks.
public enum LoopbackSocket {
    /// A socket bound to 127.0.0.1 on a free port, listening when `listening`; its descriptor and port.
    public static func bound(listening: Bool, what: String) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("\(what): socket() failed") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, !listening || listen(fd, 64) == 0 else { close(fd); throw TestSupportError("\(what): bind/listen failed") }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return (fd, Int(UInt16(bigEndian: addr.sin_port)))
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on right now, for servers a test starts as
/// separate processes (which take a port number, not a socket).
public enum FreePort {
    public static func next() throws -> Int {
        let (fd, port) = try LoopbackSocket.bound(listening: false, what: "free port")
        close(fd)
        return port
    }
}
