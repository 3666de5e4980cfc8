import Foundation

/// Device tokens the simulator takes: 64 hex digits, `prefix` first (the simulator's rules
/// answer by prefix: `dead` Unregistered, …), then `i` in hex.
public func token(_ i: Int, prefix: String = "") -> String { prefix + String(format: "%0\(64 - prefix.count)x", i) }

public func tokens(_ range: ClosedRange<Int>, prefix: String = "") -> [String] { range.map { token($0, prefix: prefix) } }
