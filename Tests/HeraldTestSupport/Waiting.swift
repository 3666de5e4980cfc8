import Foundation

/// Checks `condition` until it holds or `timeout` seconds have passed, and says whether it held:
/// for tests that wait on something another thread or process does (a file written, a
/// connection closed, a log line) rather than sleeping a fixed time and hoping it happened.
/// The condition is checked once more at the deadline, so a slow machine only makes the wait
/// longer, never the answer different.
@discardableResult
public func waitUntil(timeout: TimeInterval, pollInterval: TimeInterval = 0.01,
                      _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: pollInterval)
    }
    return try condition()
}
