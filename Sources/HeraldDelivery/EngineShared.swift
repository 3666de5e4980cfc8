import Foundation
import HeraldCore
import Synchronization

/// Requests waiting for a free stream, shared by every connection: a connection with room takes
/// the next ones, so a slow connection never holds work a fast one could do. Bounded by the
/// caller, which submits only as many as it has committed as in flight.
struct FeedBuffer {
    private var items: [PushJob] = []
    private var head = 0
    /// Topics APNs refused with a topic-scoped abort (`AbortScope.topic`): their jobs are not
    /// started but kept in `held` until the caller withdraws them.
    private var blockedTopics: Set<String> = []
    private var held: [PushJob] = []

    /// Jobs a connection may still take (held ones excluded, so an idle connection does not spin on them).
    var count: Int { items.count - head }
    /// Jobs not started, held ones included.
    var queued: Int { count + held.count }

    /// No job for `topic` starts any more; those waiting are held for `withdraw`.
    mutating func block(topic: String) { blockedTopics.insert(topic) }

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
        if !blockedTopics.isEmpty || out.contains(where: { $0.notAfter != nil }) {
            // Past the expired and held ones too, so a connection with room is not left idle.
            let now = Date()
            var kept: [PushJob] = []
            while kept.count < n && head < items.count {
                let job = items[head]
                head += 1
                if !blockedTopics.isEmpty && blockedTopics.contains(job.request.topic) {
                    held.append(job)
                } else if let limit = job.notAfter, now >= limit {
                    expired.append(job.index)
                } else {
                    kept.append(job)
                }
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
        let out = held + items[head...]
        items.removeAll(keepingCapacity: true); head = 0
        held.removeAll()
        return out
    }

    /// Takes out the jobs not started for which `take` is true; the others keep their order.
    mutating func remove(where take: (PushJob) -> Bool) -> [PushJob] {
        var out = held.filter(take)
        held.removeAll(where: take)
        var kept: [PushJob] = []
        for job in items[head...] {
            if take(job) { out.append(job) } else { kept.append(job) }
        }
        items = kept; head = 0
        return out
    }

    /// Takes out the held jobs (those of a blocked topic).
    mutating func removeHeld() -> [PushJob] {
        defer { held.removeAll() }
        return held
    }
}

/// Results travelling from the connections' threads to the runner's thread, which alone records
/// them. Bounded like the feed: at most the runner's in-flight window is ever in it.
final class ResultQueue: @unchecked Sendable {
    // @unchecked: every access to `items` holds `condition`'s lock.
    private let condition = NSCondition()
    private var items: [PushResult] = []

    /// `pool`: stamped on each result (`PushResult.pool`), so several pools can answer into one queue.
    func push(_ results: [PushResult], pool: Int = 0) {
        condition.lock()
        let start = items.count
        items.append(contentsOf: results)
        if pool != 0 { for i in start..<items.count { items[i].pool = pool } }
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

/// Where one pool's connections put their results: the queue its owner waits on (one per
/// `APNsSender`, or one shared by a `RoutingSender`'s pools), each result stamped with the pool.
struct PoolResults: Sendable {
    let pool: Int
    let queue: ResultQueue
    func push(_ results: [PushResult]) { queue.push(results, pool: pool) }
}

/// What the sender's threads share with its owner.
final class EngineShared: Sendable {
    let feed = Locked(FeedBuffer())
    let results: PoolResults
    let stopped = Atomic<Bool>(false)
    /// Set by the first connection that gets an answer meaning "this pool's credentials are
    /// refused" (InvalidProviderToken, BadCertificate, …: `AbortScope.credentials`): no connection
    /// of the pool starts another request. A topic's refusal blocks only that topic (`FeedBuffer.block`).
    let halted = Atomic<Bool>(false)
    /// No new request starts before this uptime (ns): the circuit breaker's pause.
    let pausedUntil = Atomic<UInt64>(0)
    /// Streams each connection may keep in flight (adaptive concurrency).
    let streamLimit: Atomic<Int>
    /// Connections opened (TLS and HTTP/2 SETTINGS done).
    let connectionsOpened = Atomic<Int>(0)
    let token: ProviderToken?

    init(streams: Int, token: ProviderToken?, results: PoolResults) {
        streamLimit = Atomic(streams)
        self.token = token
        self.results = results
    }
}

@inline(__always) func uptimeNanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
