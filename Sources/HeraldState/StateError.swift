import GRDB

/// A state-file failure. Carries SQLite's code and message and the statement, never its
/// arguments (device tokens are personal data).
public struct StateError: Error, CustomStringConvertible {
    public let path: String
    public let message: String
    public var description: String { "state file \(path): \(message)" }

    init(path: String, _ error: any Error) {
        self.path = path
        if let e = error as? DatabaseError {
            var m = "SQLite error \(e.resultCode.rawValue): \(e.message ?? "unknown")"
            if let sql = e.sql { m += " - while executing `\(sql)`" }
            self.message = m
        } else if let e = error as? StateError {
            self.message = e.message
        } else {
            self.message = String(describing: error)
        }
    }

    init(path: String, message: String) { self.path = path; self.message = message }
}
