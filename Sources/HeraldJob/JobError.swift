/// A job file problem, found before anything is sent (exit 2). Every message names the job
/// file, and the line where there is one, so an operator can fix it without reading code.
public struct JobError: Error, Equatable, CustomStringConvertible {
    public let file: String
    public let line: Int?
    public let message: String

    public init(file: String, line: Int?, _ message: String) {
        self.file = file; self.line = line; self.message = message
    }

    public var description: String {
        if let line { return "\(file) line \(line): \(message)" }
        return "\(file): \(message)"
    }
}
