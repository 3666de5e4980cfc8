import HeraldCore

/// `oversize: truncate_body`: shortens the alert body of an already rendered payload so the
/// whole payload fits. This is the rare path, so it may use `Character` (grapheme clusters):
/// cutting inside a cluster would split an emoji, a flag or a letter from its accent.
enum BodyTruncation {
    /// U+2026 HORIZONTAL ELLIPSIS, three bytes in UTF-8.
    static let ellipsis: [UInt8] = [0xE2, 0x80, 0xA6]

    /// The payload with the escaped body in `bodyStart..<bodyEnd` cut to fit `limit`, with "…"
    /// appended; nil when there is no body or even an empty body would not fit.
    static func truncate(_ payload: [UInt8], bodyStart: Int, bodyEnd: Int, limit: Int) -> [UInt8]? {
        guard bodyStart >= 0, bodyEnd >= bodyStart, payload.count > limit else { return nil }
        let excess = payload.count - limit
        let budget = (bodyEnd - bodyStart) - excess - ellipsis.count
        guard budget >= 0 else { return nil }

        let text = unescape(payload[bodyStart..<bodyEnd])
        var kept: [UInt8] = []
        kept.reserveCapacity(budget)
        var keptWithoutTrailingSpace = 0
        var escaped: [UInt8] = []
        for character in text {
            escaped.removeAll(keepingCapacity: true)
            JSONEscaping.appendEscaped(String(character), to: &escaped)
            if kept.count + escaped.count > budget { break }
            kept.append(contentsOf: escaped)
            if !character.isWhitespace { keptWithoutTrailingSpace = kept.count }
        }
        // "Hello …" reads worse than "Hello…".
        kept.removeLast(kept.count - keptWithoutTrailingSpace)

        var result: [UInt8] = []
        result.reserveCapacity(limit)
        result.append(contentsOf: payload[..<bodyStart])
        result.append(contentsOf: kept)
        result.append(contentsOf: ellipsis)
        result.append(contentsOf: payload[bodyEnd...])
        return result
    }

    /// Undoes JSON string escaping of text we escaped ourselves (`JSONEscaping` writes only
    /// `\"`, `\\`, `\n`, `\r`, `\t` and `\u00XX`); the other RFC 8259 escapes are handled too.
    static func unescape(_ bytes: ArraySlice<UInt8>) -> String {
        var raw: [UInt8] = []
        raw.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            i += 1
            guard b == UInt8(ascii: "\\"), i < bytes.endIndex else { raw.append(b); continue }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "n"): raw.append(0x0A)
            case UInt8(ascii: "r"): raw.append(0x0D)
            case UInt8(ascii: "t"): raw.append(0x09)
            case UInt8(ascii: "b"): raw.append(0x08)
            case UInt8(ascii: "f"): raw.append(0x0C)
            case UInt8(ascii: "u"):
                let end = min(i + 4, bytes.endIndex)
                let hex = String(decoding: bytes[i..<end], as: UTF8.self)
                i = end
                if let code = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(code) {
                    raw.append(contentsOf: String(Character(scalar)).utf8)
                }
            default: raw.append(e)
            }
        }
        return String(decoding: raw, as: UTF8.self)
    }
}
