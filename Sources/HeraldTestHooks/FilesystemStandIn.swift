import Foundation

/// Instrumentation for the network-filesystem tests, off unless `HERALD_TEST_FILESYSTEM` is set.
///
/// A test cannot mount NFS, so `HERALD_TEST_FILESYSTEM=<directory>=<magic>` (`/tmp/t/state=0x6969`)
/// makes herald take that directory, and everything under it, as on a filesystem whose statfs(2)
/// `f_type` is `magic`. herald then looks the number up in its own table, as it would a real one.
/// Nothing else changes behaviour.
public enum FilesystemStandIn {
    static let variable = "HERALD_TEST_FILESYSTEM"

    static let target: (directory: String, magic: UInt32)? = {
        guard let value = ProcessInfo.processInfo.environment[variable], let split = value.lastIndex(of: "=") else { return nil }
        let directory = String(value[..<split]), number = value[value.index(after: split)...]
        guard directory.hasPrefix("/"), number.hasPrefix("0x"), let magic = UInt32(number.dropFirst(2), radix: 16) else { return nil }
        return (directory.hasSuffix("/") && directory.count > 1 ? String(directory.dropLast()) : directory, magic)
    }()

    /// The `f_type` the test gives `path` (absolute, standardized), or nil: ask statfs(2).
    public static func magic(of path: String) -> UInt32? {
        guard let (directory, magic) = target else { return nil }
        return path == directory || path.hasPrefix(directory + "/") ? magic : nil
    }
}
