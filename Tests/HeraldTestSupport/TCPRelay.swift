import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay on 127.0.0.1 in front of a loopback server (plain sockets, a thread per
/// connection), that can turn into a black hole: `blackHole()` makes every connection relayed so
/// far stop forwarding in both directions without closing either socket, the way a NAT or a load
/// balancer that dropped its mapping leaves a connection. Bytes still arrive and are thrown away;
/// no FIN or RST reaches either end. Connections accepted afterwards are relayed normally, so a
/// client that notices and reconnects gets through.
///
/// The relay forwards bytes, not TLS: a client pointed at `url` talks TLS to the server behind
/// it, whose certificate names 127.0.0.1 as the relay's address does.
public final class TCPRelay: @unchecked Sendable {
    // @unchecked: `links`, `acceptedCount` and `stopped` are behind `lock`; the rest is set once.
    public let port: Int
    private let targetPort: Int
    private let listener: Int32
    private let lock = NSLock()
    private var links: [Link] = []
    private var acceptedCount = 0
    private var stopped = false
    private let running = DispatchGroup()

    /// One relayed connection; `holed` is read by its thread on every wakeup.
    private final class Link: @unchecked Sendable {
        // @unchecked: `holed` is behind `lock`.
        private let lock = NSLock()
        private var isHoled = false
        var holed: Bool {
            get { lock.lock(); defer { lock.unlock() }; return isHoled }
            set { lock.lock(); isHoled = newValue; lock.unlock() }
        }
    }

    /// Relays connections to 127.0.0.1:`targetPort`.
    public init(to targetPort: Int) throws {
        self.targetPort = targetPort
        (listener, port) = try LoopbackSocket.bound(listening: true, what: "relay")
        running.enter()
        Thread { [self] in acceptLoop(); running.leave() }.start()
    }

    deinit { stop() }

    /// `https://127.0.0.1:<port>`, for a client's endpoint.
    public var url: String { "https://127.0.0.1:\(port)" }

    /// Connections accepted so far (each one relayed to the server).
    public var accepted: Int { lock.lock(); defer { lock.unlock() }; return acceptedCount }

    /// Every connection relayed so far stops forwarding, both ways, and stays open; new ones are
    /// relayed normally. Returns how many connections it swallowed.
    @discardableResult
    public func blackHole() -> Int {
        lock.lock()
        let swallowed = links
        lock.unlock()
        for link in swallowed { link.holed = true }
        return swallowed.count
    }

    /// Stops accepting, closes every connection, and waits for the relay's threads to end.
    public func stop() {
        lock.lock()
        let first = !stopped
        stopped = true
        lock.unlock()
        guard first else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        running.wait()
        close(listener)
    }

    private var isStopped: Bool { lock.lock(); defer { lock.unlock() }; return stopped }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if isStopped { return }
                continue
            }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = UInt16(targetPort).bigEndian
            let connected = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { close(client); close(upstream); continue }
            let link = Link()
            lock.lock()
            acceptedCount += 1
            links.append(link)
            lock.unlock()
            running.enter()
            Thread { [self] in relay(client, upstream, link); running.leave() }.start()
        }
    }

    /// Copies both ways until either side closes (then closes both), or, once holed, reads and
    /// drops everything until the relay stops: a side that closes meanwhile is closed on its own,
    /// and the other end hears nothing of it.
    private func relay(_ client: Int32, _ upstream: Int32, _ link: Link) {
        var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: upstream, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        loop: while !isStopped {
            if poll(&fds, 2, 100) <= 0 { continue }
            let holed = link.holed
            for i in 0..<2 where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = read(fds[i].fd, &buffer, buffer.count)
                if n <= 0 {
                    if !holed { break loop }
                    close(fds[i].fd)
                    fds[i].fd = -1
                    continue
                }
                if holed { continue }
                let to = fds[1 - i].fd
                var off = 0
                while off < n {
                    let w = buffer.withUnsafeBytes { send(to, $0.baseAddress! + off, n - off, Int32(MSG_NOSIGNAL)) }
                    if w <= 0 { break loop }
                    off += w
                }
            }
            if fds[0].fd < 0 && fds[1].fd < 0 { return }
        }
        for p in fds where p.fd >= 0 { close(p.fd) }
    }
}
