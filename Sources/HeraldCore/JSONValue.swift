/// A JSON value that keeps object key order, so a payload template renders keys in the order
/// the operator wrote them (Foundation's dictionaries would shuffle them).
public indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// Number literal text, as written.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([Member])

    public struct Member: Sendable, Equatable {
        public let key: String
        public let value: JSONValue
        public init(_ key: String, _ value: JSONValue) { self.key = key; self.value = value }
    }

    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// Compact JSON text. Non-ASCII is written as raw UTF-8 (Apple: "The JSON \U notation is not supported").
    public var compactText: String {
        var out = [UInt8]()
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): out.append(contentsOf: n.utf8)
        case .string(let s): JSONEscaping.appendQuoted(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, m) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONEscaping.appendQuoted(m.key, to: &out)
                out.append(UInt8(ascii: ":"))
                m.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}

/// JSON string escaping on bytes. Escapes only what RFC 8259 requires (quote, backslash,
/// control characters); everything else, including non-ASCII, passes through as UTF-8.
public enum JSONEscaping {
    public static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        appendEscaped(s, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    public static func appendEscaped(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { appendEscaped(bytes: $0, to: &out) }
    }

    /// Runs of bytes that need no escape (nearly all of them) are appended whole: byte by byte,
    /// each append would check the array's uniqueness and capacity, and every string written to
    /// deliveries.ndjson goes through here.
    public static func appendEscaped(bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        var start = 0
        for i in 0..<bytes.count {
            let b = bytes[i]
            guard needsEscape(b) else { continue }
            if start < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i])) }
            start = i + 1
            out.append(contentsOf: escape(of: b))
        }
        if start < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...])) }
    }

    /// Whether `b` must be escaped inside a JSON string: a quote, a backslash or a control character.
    @inlinable public static func needsEscape(_ b: UInt8) -> Bool {
        b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\")
    }

    /// What stands for `b` (one that `needsEscape`) inside a JSON string: the short forms where
    /// JSON has one, else `\u00XX`. Every JSON writer takes its escapes from here.
    public static func escape(of b: UInt8) -> [UInt8] {
        switch b {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): [UInt8(ascii: "\\"), b]
        case 0x0A: [UInt8(ascii: "\\"), UInt8(ascii: "n")]
        case 0x0D: [UInt8(ascii: "\\"), UInt8(ascii: "r")]
        case 0x09: [UInt8(ascii: "\\"), UInt8(ascii: "t")]
        default: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                  HexDigits.lowercase[Int(b >> 4)], HexDigits.lowercase[Int(b & 0xF)]]
        }
    }
}
