import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP CONNECT proxy on 127.0.0.1 (plain sockets, a thread per tunnel) that counts the
/// tunnels it opens, for tests of `apns.proxy`. It only tunnels to loopback addresses. With
/// `credentials`, a CONNECT without the matching `Proxy-Authorization: Basic …` gets 407.
public final class ConnectProxy: @unchecked Sendable {
    // @unchecked: the counters are behind `lock`; the listening socket is set once.
    public var port: Int { listener?.port ?? 0 }
    private var listener: LoopbackListener?
    private let credentials: (user: String, password: String)?
    private let lock = NSLock()
    private var tunnelCount = 0
    private var refusedCount = 0
    private var targets: [String] = []

    public init(credentials: (user: String, password: String)? = nil) throws {
        self.credentials = credentials
        listener = try LoopbackListener(what: "proxy") { [weak self] client in if let self { self.serve(client) } else { close(client) } }
    }

    public var url: String { "http://127.0.0.1:\(port)" }
    /// Tunnels opened (CONNECT answered 200).
    public var tunnels: Int { lock.lock(); defer { lock.unlock() }; return tunnelCount }
    /// CONNECTs answered 407.
    public var refused: Int { lock.lock(); defer { lock.unlock() }; return refusedCount }
    /// The `host:port` of every tunnel.
    public var tunnelTargets: [String] { lock.lock(); defer { lock.unlock() }; return targets }

    public func stop() { listener?.stop() }

    private func serve(_ client: Int32) {
        var head = [UInt8]()
        var byte = [UInt8](repeating: 0, count: 1)
        // The request head, byte by byte: nothing after it may be consumed (the TLS ClientHello follows).
        while !head.ends(with: [13, 10, 13, 10]) {
            guard read(client, &byte, 1) == 1, head.count < 16_384 else { close(client); return }
            head.append(byte[0])
        }
        let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count == 3, parts[0] == "CONNECT" else { reply(client, "HTTP/1.1 405 Method Not Allowed\r\n\r\n"); close(client); return }
        let target = String(parts[1])
        if let credentials {
            let expected = "Basic " + Data("\(credentials.user):\(credentials.password)".utf8).base64EncodedString()
            let given = lines.first { $0.lowercased().hasPrefix("proxy-authorization:") }
                .map { String($0.dropFirst("proxy-authorization:".count)).trimmingCharacters(in: .whitespaces) }
            guard given == expected else {
                lock.lock(); refusedCount += 1; lock.unlock()
                reply(client, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n")
                close(client)
                return
            }
        }
        guard let colon = target.lastIndex(of: ":"), let port = UInt16(target[target.index(after: colon)...]),
              ["127.0.0.1", "localhost"].contains(String(target[..<colon])) else {
            reply(client, "HTTP/1.1 403 Forbidden\r\n\r\n"); close(client); return
        }
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { reply(client, "HTTP/1.1 502 Bad Gateway\r\n\r\n"); close(client); close(upstream); return }
        lock.lock(); tunnelCount += 1; targets.append(target); lock.unlock()
        reply(client, "HTTP/1.1 200 Connection Established\r\n\r\n")
        Self.relay(client, upstream)
    }

    /// Copies both ways until either side closes, then closes both (also Socks5Proxy's tunnels):
    /// only once both pumps are done, so neither touches a descriptor number reused meanwhile.
    static func relay(_ client: Int32, _ upstream: Int32) {
        let done = DispatchSemaphore(value: 0)
        Thread { pump(from: upstream, to: client); done.signal() }.start()
        pump(from: client, to: upstream)
        done.wait()
        close(client)
        close(upstream)
    }

    private func reply(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Copies until either side closes, then shuts both down so the other pump ends too (also
    /// Socks5Proxy's tunnels).
    static func pump(from: Int32, to: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = read(from, &buffer, buffer.count)
            if n <= 0 { break }
            var off = 0
            while off < n {
                let w = buffer.withUnsafeBytes { write(to, $0.baseAddress! + off, n - off) }
                if w <= 0 { break }
                off += w
            }
            if off < n { break }
        }
        shutdown(from, Int32(SHUT_RDWR))
        shutdown(to, Int32(SHUT_RDWR))
    }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
