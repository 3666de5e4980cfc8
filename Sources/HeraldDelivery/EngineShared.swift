import Foundation
import HeraldCore
import Synchronization

/// Requests waiting for a free stream, shared by every connection: a connection with room takes
/// the next ones, so a slow connection never holds work a fast one could do. Bounded by the
/// caller, which submits only as many as it has committed as in flight.
struct FeedBuffer {
    private var items: [PushJob] = []
    private var head = 0

    var count: Int { items.count - head }

    mutating func append(_ jobs: [PushJob]) {
        if head > 0 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        items.append(contentsOf: jobs)
    }

    /// Jobs whose `notAfter` had passed when a connection came to take them: never started.
    private var expired: [Int] = []

    /// The next `n` jobs that may still start. The time is read here, under the feed's lock, as
    /// the connection is about to write them: a job claimed inside its window but queued behind a
    /// slow server does not start after the window closed.
    mutating func take(_ n: Int) -> ArraySlice<PushJob> {
        let k = min(n, count)
        var out = items[head..<(head + k)]
        if out.contains(where: { $0.notAfter != nil }) {
            // Past the expired ones too, so a connection with room is not left idle.
            let now = Date()
            var kept: [PushJob] = []
            while kept.count < n && head < items.count {
                let job = items[head]
                head += 1
                if let limit = job.notAfter, now >= limit { expired.append(job.index) } else { kept.append(job) }
            }
            out = kept[...]
        } else {
            head += k
        }
        if head == items.count { items.removeAll(keepingCapacity: true); head = 0 }
        return out
    }

    mutating func takeExpired() -> [Int] {
        defer { expired.removeAll() }
        return expired
    }

    mutating func removeAll() -> [PushJob] {
        let out = Array(items[head...])
        items.removeAll(keepingCapacity: true); head = 0
        return out
    }
}

/// Results travelling from the connections' threads to the runner's thread, which alone records
/// them. Bounded like the feed: at most the runner's in-flight window is ever in it.
final class ResultQueue: @unchecked Sendable {
    // @unchecked: every access to `items` holds `condition`'s lock.
    private let condition = NSCondition()
    private var items: [PushResult] = []

    func push(_ results: [PushResult]) {
        condition.lock()
        items.append(contentsOf: results)
        condition.signal()
        condition.unlock()
    }

    /// Everything waiting; waits up to `timeout` seconds for the first result if none is.
    func take(timeout: TimeInterval) -> [PushResult] {
        condition.lock()
        defer { condition.unlock() }
        if items.isEmpty && timeout > 0 { _ = condition.wait(until: Date(timeIntervalSinceNow: timeout)) }
        let out = items
        items.removeAll(keepingCapacity: true)
        return out
    }
}

/// A self-pipe that wakes a connection thread out of its `poll` when work arrives.
final class WakePipe: @unchecked Sendable {
    // @unchecked: two file descriptors, written and read with thread-safe system calls.
    let readFD: Int32
    let writeFD: Int32

    init() throws(DeliveryError) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            throw .engine("cannot create a wake pipe: \(String(cString: strerror(errno)))")
        }
        readFD = fds[0]; writeFD = fds[1]
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
    }

    deinit { close(readFD); close(writeFD) }

    func signal() {
        var b: UInt8 = 1
        _ = write(writeFD, &b, 1)   // a full pipe already means "wake up"
    }

    func drain() {
        var buf = [UInt8](repeating: 0, count: 64)
        while read(readFD, &buf, buf.count) > 0 {}
    }
}

/// What the sender's threads share with its owner.
final class EngineShared: Sendable {
    let feed = Locked(FeedBuffer())
    let results = ResultQueue()
    let stopped = Atomic<Bool>(false)
    /// Set by the first connection that gets an answer meaning "our configuration is wrong"
    /// (InvalidProviderToken, BadTopic, …): no connection starts another request.
    let halted = Atomic<Bool>(false)
    /// No new request starts before this uptime (ns): the circuit breaker's pause.
    let pausedUntil = Atomic<UInt64>(0)
    /// Streams each connection may keep in flight (adaptive concurrency).
    let streamLimit: Atomic<Int>
    /// Connections opened (TLS and HTTP/2 SETTINGS done).
    let connectionsOpened = Atomic<Int>(0)
    let token: ProviderToken?

    init(streams: Int, token: ProviderToken?) {
        streamLimit = Atomic(streams)
        self.token = token
    }
}

@inline(__always) func uptimeNanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
