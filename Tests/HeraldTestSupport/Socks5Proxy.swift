import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small SOCKS5 proxy on 127.0.0.1 (RFC 1928, CONNECT only; plain sockets, a thread per
/// tunnel) for tests of `apns.proxy: socks5://…` and `socks5h://…`. It logs what each client asked
/// for (ATYP and address: a name means the proxy was left to resolve it, socks5h), and only
/// connects to loopback ("localhost" resolves to 127.0.0.1 here). With `credentials`, the client
/// must offer username/password (RFC 1929) and give these; without, it must offer "no
/// authentication".
public final class Socks5Proxy: @unchecked Sendable {
    // @unchecked: the log and counters are behind `lock`; the listening socket is set once.
    public struct Request: Sendable, Equatable, CustomStringConvertible {
        /// RFC 1928's ATYP: 1 IPv4, 3 domain name, 4 IPv6.
        public let addressType: UInt8
        public let address: String
        public let port: Int
        public var description: String { "ATYP \(addressType) \(address):\(port)" }
        public init(addressType: UInt8, address: String, port: Int) { self.addressType = addressType; self.address = address; self.port = port }
    }

    public var port: Int { listener?.port ?? 0 }
    private var listener: LoopbackListener?
    private let credentials: (user: String, password: String)?
    private let lock = NSLock()
    private var requestLog: [Request] = []
    private var methodLog: [[UInt8]] = []
    private var tunnelCount = 0
    private var refusedCount = 0

    public init(credentials: (user: String, password: String)? = nil) throws {
        self.credentials = credentials
        listener = try LoopbackListener(what: "SOCKS5 proxy") { [weak self] client in if let self { self.serve(client) } else { close(client) } }
    }

    /// `socks5://127.0.0.1:port`, or with `scheme: "socks5h"`.
    public func url(_ scheme: String = "socks5") -> String { "\(scheme)://127.0.0.1:\(port)" }
    /// The CONNECT requests, in order.
    public var requests: [Request] { lock.lock(); defer { lock.unlock() }; return requestLog }
    /// The authentication methods each greeting offered.
    public var offeredMethods: [[UInt8]] { lock.lock(); defer { lock.unlock() }; return methodLog }
    /// Tunnels opened (CONNECT answered "succeeded").
    public var tunnels: Int { lock.lock(); defer { lock.unlock() }; return tunnelCount }
    /// Clients turned away for their authentication (no acceptable method, or wrong credentials).
    public var refused: Int { lock.lock(); defer { lock.unlock() }; return refusedCount }

    public func stop() { listener?.stop() }

    private func serve(_ client: Int32) {
        guard let upstream = handshake(client) else { close(client); return }
        ConnectProxy.relay(client, upstream)
    }

    private func refuse(_ client: Int32, _ bytes: [UInt8]) -> Int32? {
        lock.lock(); refusedCount += 1; lock.unlock()
        send(client, bytes)
        return nil
    }

    /// The greeting, authentication and CONNECT; the upstream socket once the tunnel is open.
    private func handshake(_ client: Int32) -> Int32? {
        guard let head = readExactly(client, 2), head[0] == 5, let methods = readExactly(client, Int(head[1])) else { return nil }
        lock.lock(); methodLog.append(methods); lock.unlock()
        let wanted: UInt8 = credentials == nil ? 0x00 : 0x02
        guard methods.contains(wanted) else { return refuse(client, [5, 0xff]) }
        send(client, [5, wanted])
        if let credentials {
            guard let v = readExactly(client, 2), v[0] == 1, let user = readExactly(client, Int(v[1])),
                  let plen = readExactly(client, 1), let password = readExactly(client, Int(plen[0])) else { return nil }
            guard user == Array(credentials.user.utf8) && password == Array(credentials.password.utf8) else { return refuse(client, [1, 1]) }
            send(client, [1, 0])
        }
        guard let req = readExactly(client, 4), req[0] == 5, req[1] == 1 else { return nil }
        let address: String
        switch req[3] {
        case 1: guard let a = readExactly(client, 4) else { return nil }; address = a.map(String.init).joined(separator: ".")
        case 3:
            guard let n = readExactly(client, 1), let name = readExactly(client, Int(n[0])) else { return nil }
            address = String(decoding: name, as: UTF8.self)
        case 4:
            guard let a = readExactly(client, 16) else { return nil }
            var text = [CChar](repeating: 0, count: 64)
            _ = a.withUnsafeBytes { inet_ntop(AF_INET6, $0.baseAddress, &text, 64) }
            address = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        default: send(client, [5, 8, 0, 1, 0, 0, 0, 0, 0, 0]); return nil
        }
        guard let p = readExactly(client, 2) else { return nil }
        let port = Int(p[0]) << 8 | Int(p[1])
        lock.lock(); requestLog.append(Request(addressType: req[3], address: address, port: port)); lock.unlock()
        // Loopback only: "connection not allowed by ruleset" (2) for anything else.
        let loopback = ["127.0.0.1", "localhost", "::1"].contains(address)
        guard loopback, let upstream = Self.connectLoopback(ipv6: address == "::1", port: port) else {
            send(client, [5, loopback ? 5 : 2, 0, 1, 0, 0, 0, 0, 0, 0])   // "connection refused" or "not allowed by ruleset"
            return nil
        }
        lock.lock(); tunnelCount += 1; lock.unlock()
        send(client, [5, 0, 0, 1, 127, 0, 0, 1, p[0], p[1]])
        return upstream
    }

    private static func connectLoopback(ipv6: Bool, port: Int) -> Int32? {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var ok: Int32 = -1
        if ipv6 {
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_addr = in6addr_loopback
            addr.sin6_port = UInt16(port).bigEndian
            ok = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        } else {
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = UInt16(port).bigEndian
            ok = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        if ok != 0 { close(fd); return nil }
        return fd
    }

    /// Exactly `count` bytes (nothing of the TLS that follows the handshake), or nil if the client left.
    private func readExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, count - got) }
            if n <= 0 { return nil }
            got += n
        }
        return bytes
    }

    private func send(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
