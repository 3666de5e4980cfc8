internal import HeraldCore

/// The recursive-descent state for one NDJSON line: position, scratch, and the fields found.
/// Separate from `JSONLineParser` so the hot loop works on a local struct, not through `self`.
struct JSONCursor {
    typealias Failure = JSONLineParser.Failure

    let p: UnsafePointer<UInt8>
    let n: Int
    var i = 0
    var scratch: [UInt8]
    var fields: [String: FieldValue]

    init(p: UnsafePointer<UInt8>, n: Int, scratch: [UInt8], capacity: Int) {
        self.p = p; self.n = n; self.scratch = scratch
        fields = Dictionary(minimumCapacity: capacity)
    }

    func fail(_ what: String, at column: Int? = nil) -> Failure {
        .syntax("\(what) at column \((column ?? i) + 1)")
    }

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

    /// At `{`. With `store`, members go into `fields` under `prefix.key`; without (inside an
    /// array), they are only checked.
    mutating func object(prefix: String?, errorField: String, depth: Int, store: Bool) throws(Failure) {
        guard depth <= JSONLineParser.maximumDepth else { throw fail("nesting deeper than \(JSONLineParser.maximumDepth) levels") }
        i += 1
        skipSpace()
        if i < n && p[i] == UInt8(ascii: "}") { i += 1; return }
        while true {
            guard i < n else { throw fail("line ends inside an object") }
            guard p[i] == UInt8(ascii: "\"") else { throw fail("expected a quoted key, found \(Self.show(p[i]))") }
            let key = try string(errorField: errorField, build: store)
            skipSpace()
            guard i < n, p[i] == UInt8(ascii: ":") else { throw fail("expected ':' after a key") }
            i += 1
            skipSpace()
            if store, let key {
                let path = prefix.map { "\($0).\(key)" } ?? key
                try value(path: path, errorField: path, depth: depth)
            } else {
                try value(path: nil, errorField: errorField, depth: depth)
            }
            skipSpace()
            guard i < n else { throw fail("line ends inside an object") }
            if p[i] == UInt8(ascii: ",") { i += 1; skipSpace(); continue }
            if p[i] == UInt8(ascii: "}") { i += 1; return }
            throw fail("expected ',' or '}', found \(Self.show(p[i]))")
        }
    }

    mutating func array(errorField: String, depth: Int) throws(Failure) {
        guard depth <= JSONLineParser.maximumDepth else { throw fail("nesting deeper than \(JSONLineParser.maximumDepth) levels") }
        i += 1
        skipSpace()
        if i < n && p[i] == UInt8(ascii: "]") { i += 1; return }
        while true {
            try value(path: nil, errorField: errorField, depth: depth)
            skipSpace()
            guard i < n else { throw fail("line ends inside an array") }
            if p[i] == UInt8(ascii: ",") { i += 1; skipSpace(); continue }
            if p[i] == UInt8(ascii: "]") { i += 1; return }
            throw fail("expected ',' or ']', found \(Self.show(p[i]))")
        }
    }

    /// One value; stored under `path` unless it is nil (array elements).
    mutating func value(path: String?, errorField: String, depth: Int) throws(Failure) {
        guard i < n else { throw fail("expected a value, line ends") }
        let start = i
        let stored: FieldValue
        switch p[i] {
        case UInt8(ascii: "\""):
            let s = try string(errorField: errorField, build: path != nil)
            guard let path, let s else { return }
            fields[path] = .string(s)
            return
        case UInt8(ascii: "{"):
            try object(prefix: path, errorField: errorField, depth: depth + 1, store: path != nil)
            guard path != nil else { return }
            stored = .json(compactText(from: start))
        case UInt8(ascii: "["):
            try array(errorField: errorField, depth: depth + 1)
            guard path != nil else { return }
            stored = .json(compactText(from: start))
        case UInt8(ascii: "t"): try literal("true"); stored = .bool(true)
        case UInt8(ascii: "f"): try literal("false"); stored = .bool(false)
        case UInt8(ascii: "n"): try literal("null"); stored = .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try number()
            stored = .number(String(decoding: UnsafeBufferPointer(start: p + start, count: i - start), as: UTF8.self))
        default:
            throw fail("expected a value, found \(Self.show(p[i]))")
        }
        if let path { fields[path] = stored }
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

    /// The value's source text from `start` to the cursor, minus insignificant whitespace.
    /// Escapes are kept as written: the text is valid JSON either way.
    private func compactText(from start: Int) -> String {
        var out = [UInt8]()
        out.reserveCapacity(i - start)
        var inString = false
        var k = start
        while k < i {
            let b = p[k]
            if inString {
                out.append(b)
                if b == UInt8(ascii: "\\") { out.append(p[k + 1]); k += 2; continue }
                if b == UInt8(ascii: "\"") { inString = false }
            } else if b == UInt8(ascii: "\"") {
                out.append(b); inString = true
            } else if b != 0x20 && b != 0x09 && b != 0x0D && b != 0x0A {
                out.append(b)
            }
            k += 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
