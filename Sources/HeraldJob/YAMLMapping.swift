import HeraldCore
import Yams

/// A YAML mapping being read key by key. It remembers which keys were read so that
/// `finish()` can reject any key the schema does not know: a typo must never be ignored.
struct YAMLMapping {
    let path: String          // dotted path for messages, e.g. "apns.auth"
    let file: String
    let line: Int?
    private var pairs: [(key: String, value: Node, line: Int?)] = []
    private var used: Set<String> = []

    init(_ node: Node, path: String, file: String) throws(JobError) {
        self.path = path
        self.file = file
        self.line = node.mark?.line
        guard case .mapping(let mapping) = node else {
            throw JobError(file: file, line: node.mark?.line, "\(path.isEmpty ? "the job" : path) must be a mapping of keys to values")
        }
        var seen = Set<String>()
        for (k, v) in mapping {
            guard case .scalar(let s) = k else {
                throw JobError(file: file, line: k.mark?.line, "\(path): keys must be plain names")
            }
            if !seen.insert(s.string).inserted {
                throw JobError(file: file, line: k.mark?.line, "\(qualified(s.string)) is given twice")
            }
            pairs.append((s.string, v, k.mark?.line))
        }
    }

    func qualified(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func has(_ key: String) -> Bool { pairs.contains { $0.key == key } }

    mutating func node(_ key: String) -> (Node, Int?)? {
        guard let p = pairs.first(where: { $0.key == key }) else { return nil }
        used.insert(key)
        return (p.value, p.value.mark?.line ?? p.line)
    }

    func error(_ key: String, _ message: String) -> JobError {
        let l = pairs.first(where: { $0.key == key })?.line ?? line
        return JobError(file: file, line: l, "\(qualified(key)) \(message)")
    }

    mutating func string(_ key: String) throws(JobError) -> String? {
        guard let (n, l) = node(key) else { return nil }
        guard case .scalar(let s) = n else { throw JobError(file: file, line: l, "\(qualified(key)) must be text") }
        if s.style == .plain && n.null != nil { return nil }
        return s.string
    }

    mutating func requiredString(_ key: String) throws(JobError) -> String {
        guard let s = try string(key), !s.isEmpty else {
            throw JobError(file: file, line: line, "\(qualified(key)) is required")
        }
        return s
    }

    mutating func int(_ key: String, range: ClosedRange<Int>) throws(JobError) -> Int? {
        guard let (n, l) = node(key) else { return nil }
        guard case .scalar(let s) = n, let v = Int(s.string) else {
            throw JobError(file: file, line: l, "\(qualified(key)) must be a whole number")
        }
        guard range.contains(v) else {
            throw JobError(file: file, line: l, "\(qualified(key)) must be between \(range.lowerBound) and \(range.upperBound), not \(v)")
        }
        return v
    }

    mutating func double(_ key: String, min: Double) throws(JobError) -> Double? {
        guard let (n, l) = node(key) else { return nil }
        guard case .scalar(let s) = n, let v = Double(s.string), v.isFinite, v >= min else {
            throw JobError(file: file, line: l, "\(qualified(key)) must be a number ≥ \(min)")
        }
        return v
    }

    mutating func bool(_ key: String) throws(JobError) -> Bool? {
        guard let (n, l) = node(key) else { return nil }
        guard let b = n.bool else { throw JobError(file: file, line: l, "\(qualified(key)) must be true or false") }
        return b
    }

    mutating func duration(_ key: String) throws(JobError) -> Int? {
        guard let (n, l) = node(key) else { return nil }
        guard case .scalar(let s) = n, let v = DurationText.seconds(s.string) else {
            throw JobError(file: file, line: l, "\(qualified(key)) must be a duration such as 90s, 15m, 24h or 7d")
        }
        return v
    }

    mutating func choice<E: RawRepresentable & CaseIterable>(_ key: String, _: E.Type) throws(JobError) -> E? where E.RawValue == String {
        guard let text = try string(key) else { return nil }
        guard let v = E(rawValue: text) else {
            throw error(key, "must be one of \(E.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(text)\"")
        }
        return v
    }

    mutating func hexPrefixes(_ key: String) throws(JobError) -> [String] {
        guard let (n, l) = node(key) else { return [] }
        var out: [String] = []
        let items: [Node]
        switch n {
        case .scalar: items = [n]
        case .sequence(let s): items = Array(s)
        default: throw JobError(file: file, line: l, "\(qualified(key)) must be a list of hex prefixes")
        }
        for item in items {
            guard case .scalar(let s) = item, !s.string.isEmpty, s.string.allSatisfy({ $0.isHexDigit }) else {
                throw JobError(file: file, line: item.mark?.line ?? l, "\(qualified(key)) entries must be hex digits")
            }
            out.append(s.string.lowercased())
        }
        return out
    }

    mutating func mapping(_ key: String) throws(JobError) -> YAMLMapping? {
        guard let (n, _) = node(key) else { return nil }
        if case .scalar(let s) = n, s.style == .plain, n.null != nil { return nil }
        return try YAMLMapping(n, path: qualified(key), file: file)
    }

    /// Rejects keys the schema does not know, listing the ones it does.
    func finish(known: [String]) throws(JobError) {
        for p in pairs where !used.contains(p.key) { throw unknown(p.key, line: p.line, known: known) }
    }

    /// The same before any key is read: a misspelt key (`audiense:`, `localtime:`) is named itself,
    /// not by what its absence causes ("audience is required").
    func rejectUnknown(known: [String]) throws(JobError) {
        for p in pairs where !known.contains(p.key) { throw unknown(p.key, line: p.line, known: known) }
    }

    private func unknown(_ key: String, line: Int?, known: [String]) -> JobError {
        let guess = Self.closest(to: key, in: known).map { ": did you mean \"\(qualified($0))\"?" } ?? ""
        return JobError(file: file, line: line,
                        "unknown key \"\(qualified(key))\"\(guess) (known keys\(path.isEmpty ? "" : " in \(path)"): \(known.joined(separator: ", ")))")
    }

    /// The known key nearest to `key` by edit distance (case and `-`/`_` ignored), if it is near
    /// enough to be a slip of the keyboard: at most a third of its length, and at least one edit.
    static func closest(to key: String, in known: [String]) -> String? {
        func folded(_ s: String) -> [Character] { Array(s.lowercased().replacingOccurrences(of: "-", with: "_")) }
        let k = folded(key)
        let scored = known.map { (name: $0, distance: editDistance(k, folded($0))) }
        guard let best = scored.min(by: { $0.distance < $1.distance }) else { return nil }
        let allowed = max(1, min(k.count, folded(best.name).count) / 3)
        return best.distance <= allowed ? best.name : nil
    }

    /// Levenshtein distance, two rows at a time.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count), current = previous
        for i in 1...a.count {
            current[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
