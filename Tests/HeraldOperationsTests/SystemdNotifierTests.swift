import Foundation
import HeraldOperations
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// sd_notify datagrams on a real AF_UNIX socket: once STOPPING=1 is sent, no STATUS follows
/// (`systemctl status` keeps saying the run is stopping, not that it sends again).
@Suite struct SystemdNotifierTests {
    let dir = TemporaryDirectory("sd-notify")

    /// A bound datagram socket and everything it receives within `timeout`.
    final class Receiver {
        let fd: Int32
        let path: String
        init(path: String) throws {
            self.path = path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: Array(path.utf8) + [0]) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            #expect(bound == 0, "bind \(path): errno \(errno)")
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        deinit { close(fd) }

        func drain() -> [String] {
            var out: [String] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n <= 0 { return out }
                out.append(String(decoding: buffer[..<n], as: UTF8.self))
            }
        }
    }

    @Test func noStatusAfterStopping() throws {
        let receiver = try Receiver(path: dir.file("notify.sock"))
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.path]))
        notifier.ready(status: "sending")
        notifier.status("1,000 sent")
        notifier.stopping()
        notifier.status("2,000 sent")
        notifier.stopping()
        notifier.ready(status: "sending")
        let got = receiver.drain()
        #expect(got == ["READY=1\nSTATUS=sending", "STATUS=1,000 sent", "STOPPING=1\nSTATUS=stopping after the requests in flight"], "\(got)")
    }
}
