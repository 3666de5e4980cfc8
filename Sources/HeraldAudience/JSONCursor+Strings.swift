/// JSON strings: the common case (no escapes) is a range of the line's bytes; escapes are
/// decoded into the reused scratch buffer. Either way the text is checked to be UTF-8.
extension JSONCursor {
    /// Where a string's unescaped bytes are: `p[start..<start+count]`, or all of `scratch`.
    struct Text {
        let start: Int
        let count: Int
        let inScratch: Bool
    }

    /// At the opening quote. Validates the text (a string inside an array ends up in a `.json`
    /// field, so it must be valid UTF-8 too); `errorPath` names the field if it is not.
    mutating func string(errorPath: Range<Int>?) throws(Failure) -> Text {
        let open = i
        i += 1
        let start = i
        i = Self.plainEnd(p, from: i, count: n)
        guard i < n else { throw fail("string is never closed", at: open) }
        if p[i] == UInt8(ascii: "\"") {
            let bytes = UnsafeBufferPointer(start: p + start, count: i - start)
            i += 1
            try check(bytes, errorPath: errorPath)
            return Text(start: start, count: bytes.count, inScratch: false)
        }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(start: p + start, count: i - start))
        while true {
            guard i < n else { throw fail("string is never closed", at: open) }
            let b = p[i]
            if b == UInt8(ascii: "\"") { i += 1; break }
            if b < 0x20 { throw fail("unescaped control character \(Self.show(b)) in a string") }
            if b != UInt8(ascii: "\\") { scratch.append(b); i += 1; continue }
            try escape()
        }
        let decoded = scratch
        try decoded.withUnsafeBufferPointer { (bytes) throws(Failure) in try check(bytes, errorPath: errorPath) }
        return Text(start: 0, count: decoded.count, inScratch: true)
    }

    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// The first quote, backslash or control byte at or after `start` (or `count`), 8 bytes at
    /// a time: string values are most of a line (tokens alone are 64 bytes).
    @inline(__always)
    private static func plainEnd(_ p: UnsafePointer<UInt8>, from start: Int, count: Int) -> Int {
        var i = start
        let raw = UnsafeRawPointer(p)
        while i + 8 <= count {
            let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            // "Has a zero byte" on word XOR '"' and word XOR '\', and "has a byte below 0x20"
            // (bytes ≥ 0x80 are never flagged); the lowest flag is exact.
            let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
            let hits = ((quote &- ones) & ~quote | (backslash &- ones) & ~backslash | (word &- ones &* 0x20) & ~word) & highs
            if hits != 0 { return i + hits.trailingZeroBitCount >> 3 }
            i += 8
        }
        while i < count {
            let b = p[i]
            if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b < 0x20 { return i }
            i += 1
        }
        return i
    }

    private func check(_ bytes: UnsafeBufferPointer<UInt8>, errorPath: Range<Int>?) throws(Failure) {
        if !UTF8Text.isValid(bytes) { throw .badUTF8(field: fieldName(errorPath), detail: UTF8Text.problem(bytes)) }
    }

    /// At a backslash: appends the escaped character's UTF-8 to `scratch`.
    private mutating func escape() throws(Failure) {
        let at = i
        guard i + 1 < n else { throw fail("string is never closed", at: at) }
        let e = p[i + 1]
        i += 2
        switch e {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(e)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4(at: at)
            if (0xD800...0xDBFF).contains(scalar) {
                // A high surrogate must be followed by an escaped low one: "\ud83d\ude00" is 😀.
                guard i + 1 < n, p[i] == UInt8(ascii: "\\"), p[i + 1] == UInt8(ascii: "u") else {
                    throw fail("unpaired surrogate in \\u escape", at: at)
                }
                i += 2
                let low = try hex4(at: at)
                guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate in \\u escape", at: at) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw fail("unpaired surrogate in \\u escape", at: at)
            }
            appendUTF8(scalar)
        default:
            throw fail("invalid escape \\\(Self.show(e))", at: at)
        }
    }

    private mutating func hex4(at escapeStart: Int) throws(Failure) -> UInt32 {
        guard i + 4 <= n else { throw fail("\\u escape needs 4 hex digits", at: escapeStart) }
        var value: UInt32 = 0
        for k in 0..<4 {
            let b = p[i + k]
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw fail("\\u escape needs 4 hex digits", at: escapeStart)
            }
            value = value << 4 | UInt32(digit)
        }
        i += 4
        return value
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }
}
