internal import HeraldCore

/// The recursive-descent state for one NDJSON line: position, scratch, and the fields found.
/// Separate from `JSONLineParser` so the hot loop works on a local struct, not through `self`.
///
/// Fields go into a `JSONRowBuilder` as bytes: a dotted path is written once as bytes
/// (`user.first_name`), never built as a String, and ranges of the builder stand for paths;
/// a path becomes a String only for an error message.
struct JSONCursor {
    typealias Failure = JSONLineParser.Failure

    let p: UnsafePointer<UInt8>
    let n: Int
    var i = 0
    var scratch: [UInt8]
    var row: JSONRowBuilder

    init(p: UnsafePointer<UInt8>, n: Int, scratch: [UInt8], row: JSONRowBuilder) {
        self.p = p; self.n = n; self.scratch = scratch; self.row = row
    }

    func fail(_ what: String, at column: Int? = nil) -> Failure {
        .syntax("\(what) at column \((column ?? i) + 1)")
    }

    /// The field a problem belongs to, for the operator ("" at the top level).
    func fieldName(_ path: Range<Int>?) -> String { path.map { row.text($0) } ?? "" }

    static func show(_ b: UInt8) -> String {
        b >= 0x20 && b < 0x7F ? "'\(Character(Unicode.Scalar(b)))'" : "byte 0x\(String(b, radix: 16))"
    }

    mutating func skipSpace() {
        while i < n {
            switch p[i] {
            case 0x20, 0x09, 0x0D, 0x0A: i += 1
            default: return
            }
        }
    }

    /// At `{`. With `store`, members are recorded under `prefix.key`; without (inside an
    /// array), they are only checked. `errorPath` names the field for UTF-8 problems in keys.
    mutating func object(prefix: Range<Int>?, errorPath: Range<Int>?, depth: Int, store: Bool) throws(Failure) {
        guard depth <= JSONLineParser.maximumDepth else { throw fail("nesting deeper than \(JSONLineParser.maximumDepth) levels") }
        i += 1
        skipSpace()
        if i < n && p[i] == UInt8(ascii: "}") { i += 1; return }
        while true {
            guard i < n else { throw fail("line ends inside an object") }
            guard p[i] == UInt8(ascii: "\"") else { throw fail("expected a quoted key, found \(Self.show(p[i]))") }
            let key = try string(errorPath: errorPath)
            var path: Range<Int>?
            if store {
                path = key.inScratch
                    ? scratch.withUnsafeBufferPointer { row.appendPath(prefix: prefix, key: $0) }
                    : row.appendPath(prefix: prefix, key: UnsafeBufferPointer(start: p + key.start, count: key.count))
            }
            skipSpace()
            guard i < n, p[i] == UInt8(ascii: ":") else { throw fail("expected ':' after a key") }
            i += 1
            skipSpace()
            try value(path: path, errorPath: path ?? errorPath, depth: depth)
            skipSpace()
            guard i < n else { throw fail("line ends inside an object") }
            if p[i] == UInt8(ascii: ",") { i += 1; skipSpace(); continue }
            if p[i] == UInt8(ascii: "}") { i += 1; return }
            throw fail("expected ',' or '}', found \(Self.show(p[i]))")
        }
    }

    mutating func array(errorPath: Range<Int>?, depth: Int) throws(Failure) {
        guard depth <= JSONLineParser.maximumDepth else { throw fail("nesting deeper than \(JSONLineParser.maximumDepth) levels") }
        i += 1
        skipSpace()
        if i < n && p[i] == UInt8(ascii: "]") { i += 1; return }
        while true {
            try value(path: nil, errorPath: errorPath, depth: depth)
            skipSpace()
            guard i < n else { throw fail("line ends inside an array") }
            if p[i] == UInt8(ascii: ",") { i += 1; skipSpace(); continue }
            if p[i] == UInt8(ascii: "]") { i += 1; return }
            throw fail("expected ',' or ']', found \(Self.show(p[i]))")
        }
    }

    /// One value; recorded under `path` unless it is nil (array elements).
    mutating func value(path: Range<Int>?, errorPath: Range<Int>?, depth: Int) throws(Failure) {
        guard i < n else { throw fail("expected a value, line ends") }
        let start = i
        let kind: JSONRowBuilder.Kind
        var valueStart = row.position
        switch p[i] {
        case UInt8(ascii: "\""):
            let text = try string(errorPath: errorPath)
            guard let path else { return }
            valueStart = row.position
            if text.inScratch {
                scratch.withUnsafeBufferPointer { row.append($0) }
            } else {
                row.append(UnsafeBufferPointer(start: p + text.start, count: text.count))
            }
            row.add(path: path, kind: .string, value: valueStart..<row.position)
            return
        case UInt8(ascii: "{"):
            try object(prefix: path, errorPath: errorPath, depth: depth + 1, store: path != nil)
            guard path != nil else { return }
            valueStart = row.position
            appendCompactText(from: start)
            kind = .json
        case UInt8(ascii: "["):
            try array(errorPath: errorPath, depth: depth + 1)
            guard path != nil else { return }
            valueStart = row.position
            appendCompactText(from: start)
            kind = .json
        case UInt8(ascii: "t"): try literal("true"); kind = .true
        case UInt8(ascii: "f"): try literal("false"); kind = .false
        case UInt8(ascii: "n"): try literal("null"); kind = .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try number()
            guard path != nil else { return }
            row.append(UnsafeBufferPointer(start: p + start, count: i - start))
            kind = .number
        default:
            throw fail("expected a value, found \(Self.show(p[i]))")
        }
        if let path { row.add(path: path, kind: kind, value: valueStart..<row.position) }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard i + count <= n, memcmpEqual(p + i, word.utf8Start, count) else { throw fail("invalid literal (expected \(word))") }
        i += count
    }

    private func memcmpEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        for k in 0..<count where a[k] != b[k] { return false }
        return true
    }

    private mutating func digits() -> Int {
        let start = i
        while i < n, p[i] >= UInt8(ascii: "0"), p[i] <= UInt8(ascii: "9") { i += 1 }
        return i - start
    }

    /// RFC 8259 number grammar: `-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`.
    private mutating func number() throws(Failure) {
        let start = i
        if p[i] == UInt8(ascii: "-") { i += 1 }
        if i < n && p[i] == UInt8(ascii: "0") {
            i += 1
        } else if digits() == 0 {
            throw fail("invalid number", at: start)
        }
        if i < n && p[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { throw fail("invalid number (no digits after '.')", at: start) }
        }
        if i < n && (p[i] == UInt8(ascii: "e") || p[i] == UInt8(ascii: "E")) {
            i += 1
            if i < n && (p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-")) { i += 1 }
            guard digits() > 0 else { throw fail("invalid number (no digits in exponent)", at: start) }
        }
    }

    /// Appends the value's source text from `start` to the cursor, minus insignificant
    /// whitespace, in runs (exports write `", "` and `": "` between members). Escapes are kept
    /// as written: the text is valid JSON either way.
    private mutating func appendCompactText(from start: Int) {
        var inString = false
        var runStart = start
        var k = start
        while k < i {
            let b = p[k]
            if inString {
                if b == UInt8(ascii: "\\") { k += 2; continue }
                if b == UInt8(ascii: "\"") { inString = false }
            } else if b == UInt8(ascii: "\"") {
                inString = true
            } else if b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A {
                row.append(UnsafeBufferPointer(start: p + runStart, count: k - runStart))
                runStart = k + 1
            }
            k += 1
        }
        row.append(UnsafeBufferPointer(start: p + runStart, count: i - runStart))
    }
}
