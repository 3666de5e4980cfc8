/// A minimal RFC 8259 checker for `{{field:json}}` values that arrive as text (CSV cells).
/// It only answers "is this one well-formed JSON value?"; nothing is built, so a row costs no
/// allocations. Nesting is capped so a hostile row cannot overflow the stack.
enum JSONTextValidator {
    static let maximumDepth = 64

    static func isValid(_ bytes: [UInt8]) -> Bool {
        var i = 0
        guard value(bytes, &i, depth: 0) else { return false }
        skipSpace(bytes, &i)
        return i == bytes.count
    }

    /// The whole of `bytes` is one JSON number (`-0.5e3`, not `+1`, `01`, `.5`, `NaN`).
    static func isNumber(_ bytes: [UInt8]) -> Bool {
        var i = 0
        return number(bytes, &i) && i == bytes.count
    }

    static func isNumber(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        return number(bytes, &i) && i == bytes.count
    }

    private static func value(_ b: [UInt8], _ i: inout Int, depth: Int) -> Bool {
        guard depth < maximumDepth else { return false }
        skipSpace(b, &i)
        guard i < b.count else { return false }
        switch b[i] {
        case UInt8(ascii: "{"):
            i += 1
            skipSpace(b, &i)
            if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return true }
            while true {
                skipSpace(b, &i)
                guard string(b, &i) else { return false }
                skipSpace(b, &i)
                guard i < b.count, b[i] == UInt8(ascii: ":") else { return false }
                i += 1
                guard value(b, &i, depth: depth + 1) else { return false }
                skipSpace(b, &i)
                guard i < b.count else { return false }
                if b[i] == UInt8(ascii: "}") { i += 1; return true }
                guard b[i] == UInt8(ascii: ",") else { return false }
                i += 1
            }
        case UInt8(ascii: "["):
            i += 1
            skipSpace(b, &i)
            if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return true }
            while true {
                guard value(b, &i, depth: depth + 1) else { return false }
                skipSpace(b, &i)
                guard i < b.count else { return false }
                if b[i] == UInt8(ascii: "]") { i += 1; return true }
                guard b[i] == UInt8(ascii: ",") else { return false }
                i += 1
            }
        case UInt8(ascii: "\""): return string(b, &i)
        case UInt8(ascii: "t"): return literal("true", b, &i)
        case UInt8(ascii: "f"): return literal("false", b, &i)
        case UInt8(ascii: "n"): return literal("null", b, &i)
        default: return number(b, &i)
        }
    }

    private static func string(_ b: [UInt8], _ i: inout Int) -> Bool {
        guard i < b.count, b[i] == UInt8(ascii: "\"") else { return false }
        i += 1
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "\"") { i += 1; return true }
            if c < 0x20 { return false }
            if c == UInt8(ascii: "\\") {
                i += 1
                guard i < b.count else { return false }
                switch b[i] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                     UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    break
                case UInt8(ascii: "u"):
                    guard i + 4 < b.count, b[(i + 1)...(i + 4)].allSatisfy(isHexDigit) else { return false }
                    i += 4
                default: return false
                }
            }
            i += 1
        }
        return false
    }

    private static func number<C: RandomAccessCollection<UInt8>>(_ b: C, _ i: inout Int) -> Bool where C.Index == Int {
        if i < b.count, b[i] == UInt8(ascii: "-") { i += 1 }
        guard i < b.count, isDigit(b[i]) else { return false }
        if b[i] == UInt8(ascii: "0") { i += 1 } else { while i < b.count, isDigit(b[i]) { i += 1 } }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            guard i < b.count, isDigit(b[i]) else { return false }
            while i < b.count, isDigit(b[i]) { i += 1 }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard i < b.count, isDigit(b[i]) else { return false }
            while i < b.count, isDigit(b[i]) { i += 1 }
        }
        return true
    }

    private static func literal(_ word: StaticString, _ b: [UInt8], _ i: inout Int) -> Bool {
        let w = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard i + w.count <= b.count, b[i..<(i + w.count)].elementsEqual(w) else { return false }
        i += w.count
        return true
    }

    private static func skipSpace(_ b: [UInt8], _ i: inout Int) {
        while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
    }

    private static func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

    private static func isHexDigit(_ c: UInt8) -> Bool {
        isDigit(c) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "f")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "F"))
    }
}
