#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a `GzipInflater` on its own thread, a few chunks ahead of the parser.
///
/// Why: inflate costs about as much CPU as parsing. On one thread reading takes inflate + parse;
/// with inflate a few chunks ahead on another core it takes about max(inflate, parse), as
/// `zcat | wc -l` does with its two processes. Memory stays fixed: `chunkCount` chunks of
/// `chunkSize` bytes, recycled; the producer waits when all are full.
///
/// Thread safety (hence `@unchecked Sendable`): after `start()` the inflater and its FileInput
/// are touched only by the producer thread; every other mutable property is read and written
/// only with `mutex` held. Chunk memory is handed over through the `filled`/`free` queues, so a
/// chunk is owned by exactly one side at a time.
final class InflateAhead: @unchecked Sendable {
    static let chunkSize = 256 * 1024
    static let chunkCount = 4

    private let inflater: GzipInflater
    private let chunks: UnsafeMutablePointer<UInt8>
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let changed: UnsafeMutablePointer<pthread_cond_t>

    // Guarded by `mutex`.
    private var filled: [(index: Int, count: Int, consumedBytes: Int)] = []
    private var free: [Int] = Array(0..<InflateAhead.chunkCount)
    private var failure: AudienceError?
    private var producerDone = false
    private var cancelled = false

    // Consumer side only.
    private var current: (index: Int, count: Int, offset: Int)?
    /// Compressed bytes consumed by zlib as of the last chunk handed to the parser.
    private(set) var consumedBytes = 0

    init(inflater: GzipInflater) {
        self.inflater = inflater
        chunks = .allocate(capacity: Self.chunkSize * Self.chunkCount)
        mutex = .allocate(capacity: 1)
        changed = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(changed, nil)
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        changed.deallocate()
        mutex.deallocate()
        chunks.deallocate()
    }

    /// Starts the producer thread; false if the system would not make one (the caller then
    /// inflates in line instead).
    func start() -> Bool {
        #if os(Linux)
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            Unmanaged<InflateAhead>.fromOpaque(raw).takeRetainedValue().produce()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<InflateAhead>.fromOpaque(context).release()
            return false
        }
        pthread_detach(thread)
        return true
        #else
        return false   // pthread_create's Swift signature differs on Darwin; herald targets Linux
        #endif
    }

    /// Tells the producer to stop after its current chunk (the reader was dropped early).
    func cancel() {
        pthread_mutex_lock(mutex)
        cancelled = true
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
    }

    /// Copies up to `count` inflated bytes; 0 at the end. A producer error is thrown after all
    /// data inflated before it, in order, as the in-line inflater would.
    func read(into destination: UnsafeMutablePointer<UInt8>, count: Int) throws(AudienceError) -> Int {
        if current == nil {
            pthread_mutex_lock(mutex)
            while filled.isEmpty && !producerDone { pthread_cond_wait(changed, mutex) }
            if filled.isEmpty {
                let failure = self.failure
                pthread_mutex_unlock(mutex)
                if let failure { throw failure }
                return 0
            }
            let next = filled.removeFirst()
            pthread_mutex_unlock(mutex)
            current = (next.index, next.count, 0)
            consumedBytes = next.consumedBytes
        }
        guard let chunk = current else { return 0 }
        let n = min(count, chunk.count - chunk.offset)
        destination.update(from: chunks + chunk.index * Self.chunkSize + chunk.offset, count: n)
        if chunk.offset + n == chunk.count {
            current = nil
            pthread_mutex_lock(mutex)
            free.append(chunk.index)
            pthread_cond_broadcast(changed)
            pthread_mutex_unlock(mutex)
        } else {
            current = (chunk.index, chunk.count, chunk.offset + n)
        }
        return n
    }

    /// The producer thread: fill a free chunk, publish it, until end of data, error or cancel.
    private func produce() {
        while true {
            pthread_mutex_lock(mutex)
            while free.isEmpty && !cancelled { pthread_cond_wait(changed, mutex) }
            if cancelled {
                producerDone = true
                pthread_mutex_unlock(mutex)
                return
            }
            let index = free.removeFirst()
            pthread_mutex_unlock(mutex)

            let base = chunks + index * Self.chunkSize
            var count = 0
            var ended = false
            var error: AudienceError?
            do {
                while count < Self.chunkSize {
                    let n = try inflater.inflate(into: base + count, count: Self.chunkSize - count)
                    if n == 0 { ended = true; break }
                    count += n
                }
            } catch let e {
                error = e
            }

            pthread_mutex_lock(mutex)
            if count > 0 {
                filled.append((index, count, inflater.consumedBytes))
            } else {
                free.append(index)
            }
            if let error { failure = error }
            let stop = ended || error != nil
            if stop { producerDone = true }
            pthread_cond_broadcast(changed)
            pthread_mutex_unlock(mutex)
            if stop { return }
        }
    }
}
