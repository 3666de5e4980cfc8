#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a pthread mutex, for state the sender's connection threads and the
/// simulator's event loops share.
///
/// Not `Synchronization.Mutex`: on Linux that waits on a futex without calling pthreads, so
/// ThreadSanitizer, which learns about locks by intercepting `pthread_mutex_lock`/`unlock`, sees
/// no happens-before edge and reports every access inside two threads' `withLock` closures as a
/// race. With this lock `make sanitize` (docs/fuzzing.md) reports only real races.
public final class Locked<Value> {
    // Sendable below: `value` is read and written only between `pthread_mutex_lock` and `unlock` of
    // `mutex`, which lives in its own allocation so its address never moves.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        // A default mutex cannot fail to initialise on Linux (EAGAIN/ENOMEM are for attributes
        // that need resources); a failure here would be a broken libc.
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock; `body` must not call `withLock` on the
    /// same lock (it is not recursive).
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

// @unchecked: see `mutex`; a value that is itself Sendable may cross threads inside the lock.
extension Locked: @unchecked Sendable where Value: Sendable {}
