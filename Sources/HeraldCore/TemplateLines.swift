/// Where each value of a push template was written: the job file (or `push.template_file`) and the
/// line of every JSON path in it, recorded by the job loader. A template problem is found after
/// loading, by the payload compiler, which knows the path (`aps.event`) but not the YAML it came
/// from: with this, its message names the file and line as every other job error does.
public struct TemplateLines: Sendable, Equatable {
    public struct Location: Sendable, Equatable {
        public let file: String
        public let line: Int
    }

    /// `source` (`push.template`, `push.locales.fr`) + "|" + JSON path (`aps.alert.loc-args[1]`,
    /// "" for the template itself).
    private var locations: [String: Location] = [:]

    public init() {}

    public mutating func record(source: String, path: String, file: String, line: Int) {
        locations[source + "|" + path] = Location(file: file, line: line)
    }

    /// The line of `path` in `source`, else of the nearest enclosing value (a missing key's
    /// object, or the template itself).
    public func locate(source: String, path: String?) -> Location? {
        var p = path ?? ""
        while true {
            if let found = locations[source + "|" + p] { return found }
            if p.isEmpty { return nil }
            if p.hasSuffix("]"), let open = p.lastIndex(of: "[") {
                p = String(p[..<open])
            } else if let dot = p.lastIndex(of: ".") {
                p = String(p[..<dot])
            } else {
                p = ""
            }
        }
    }
}
