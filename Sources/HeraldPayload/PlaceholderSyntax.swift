/// The JSON type a whole-value placeholder such as `{{unread:int}}` turns into.
enum ValueType: String, Sendable, CaseIterable {
    case int, number, bool, json
}

/// One `{{field|default}}` or `{{field:type|default}}` found in a template string.
struct Placeholder: Sendable, Equatable {
    /// The field name as written, dots included (`user.first_name` is one field name).
    let field: String
    /// Text after the pipe, used when the field is absent from the row.
    let defaultText: String?
    /// Set for typed placeholders, which must be the whole string value.
    let type: ValueType?
}

/// A template string split into literal text and placeholders.
enum StringSegment: Sendable, Equatable {
    case literal(String)
    case placeholder(Placeholder)
}

/// Why a template string's placeholders cannot be used; the caller adds the source and path.
enum PlaceholderProblem: Error, Equatable {
    case unterminated
    case bad(String)
}

/// Parses placeholders once, at job load. Works on UTF-8 bytes because `{{`, `}}`, `|` and `:`
/// are ASCII and can never appear inside a multi-byte scalar.
enum PlaceholderSyntax {
    static func parse(_ text: String) throws(PlaceholderProblem) -> [StringSegment] {
        let bytes = Array(text.utf8)
        var segments: [StringSegment] = []
        var literalStart = 0
        var i = 0
        while i + 1 < bytes.count {
            guard bytes[i] == UInt8(ascii: "{"), bytes[i + 1] == UInt8(ascii: "{") else { i += 1; continue }
            guard let close = find(closeIn: bytes, from: i + 2) else { throw .unterminated }
            if literalStart < i { segments.append(.literal(string(bytes[literalStart..<i]))) }
            segments.append(.placeholder(try placeholder(string(bytes[(i + 2)..<close]))))
            i = close + 2
            literalStart = i
        }
        if literalStart < bytes.count { segments.append(.literal(string(bytes[literalStart...]))) }
        let typed = segments.compactMap { segment -> Placeholder? in
            if case .placeholder(let p) = segment, p.type != nil { return p }
            return nil
        }
        if let p = typed.first, segments.count > 1 {
            throw .bad("typed placeholder {{\(p.field):\(p.type?.rawValue ?? "")}} must be the whole string value")
        }
        return segments
    }

    /// The placeholder when `segments` is exactly one typed placeholder, else nil.
    static func wholeTyped(_ segments: [StringSegment]) -> Placeholder? {
        guard segments.count == 1, case .placeholder(let p) = segments[0], p.type != nil else { return nil }
        return p
    }

    private static func find(closeIn bytes: [UInt8], from start: Int) -> Int? {
        var j = start
        while j + 1 < bytes.count {
            if bytes[j] == UInt8(ascii: "}"), bytes[j + 1] == UInt8(ascii: "}") { return j }
            j += 1
        }
        return nil
    }

    private static func placeholder(_ inner: String) throws(PlaceholderProblem) -> Placeholder {
        var spec = Substring(inner)
        var defaultText: String?
        if let pipe = spec.firstIndex(of: "|") {
            defaultText = trimmed(spec[spec.index(after: pipe)...])
            spec = spec[..<pipe]
        }
        var name = trimmed(spec)
        var type: ValueType?
        if let colon = name.lastIndex(of: ":") {
            let suffix = trimmed(name[name.index(after: colon)...])
            guard let t = ValueType(rawValue: suffix) else {
                throw .bad("unknown placeholder type \"\(suffix)\" in {{\(inner)}} (use int, number, bool or json)")
            }
            type = t
            name = trimmed(name[..<colon])
        }
        if name.isEmpty { throw .bad("empty placeholder name in {{\(inner)}}") }
        if name.contains("{") || name.contains("}") {
            throw .bad("placeholder name \"\(name)\" contains a brace")
        }
        if let t = type, let d = defaultText, TypedValue.convert(text: d, to: t) == nil {
            throw .bad("default \"\(d)\" of {{\(name):\(t.rawValue)}} is not a valid \(t.rawValue)")
        }
        return Placeholder(field: name, defaultText: defaultText, type: type)
    }

    private static func string(_ slice: ArraySlice<UInt8>) -> String { String(decoding: slice, as: UTF8.self) }

    private static func trimmed<S: StringProtocol>(_ s: S) -> String {
        var sub = Substring(s)
        while let f = sub.first, f == " " || f == "\t" { sub = sub.dropFirst() }
        while let l = sub.last, l == " " || l == "\t" { sub = sub.dropLast() }
        return String(sub)
    }
}
