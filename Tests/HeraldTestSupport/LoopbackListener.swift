import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A listening socket on 127.0.0.1 that hands each accepted client to `serve` on a thread of its
/// own, until `stop`: what the test proxies (ConnectProxy, Socks5Proxy) share.
public final class LoopbackListener: @unchecked Sendable {
    // @unchecked: `stopped` is behind `lock`; the socket and the closure are set once.
    public let port: Int
    private let socket: Int32
    private let lock = NSLock()
    private var stopped = false

    public init(what: String, serve: @escaping @Sendable (Int32) -> Void) throws {
        (socket, port) = try LoopbackSocket.bound(listening: true, what: what)
        Thread { [self] in
            while true {
                let client = accept(socket, nil, nil)
                if client < 0 {
                    lock.lock(); let done = stopped; lock.unlock()
                    if done { return }
                    continue
                }
                Thread { serve(client) }.start()
            }
        }.start()
    }

    deinit { stop() }

    public func stop() {
        lock.lock()
        let first = !stopped
        stopped = true
        lock.unlock()
        if first { shutdown(socket, Int32(SHUT_RDWR)); close(socket) }
    }
}
