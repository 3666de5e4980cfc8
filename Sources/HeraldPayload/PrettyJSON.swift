/// Indents a rendered payload for `herald preview`. It re-spaces the bytes herald produced, so
/// keys stay in template order and text stays raw UTF-8 exactly as sent (a parse and re-encode
/// through Foundation would reorder keys and could escape what Apple wants unescaped).
public enum PrettyJSON {
    /// `bytes` must be compact JSON (what the renderer writes); two-space indent, `"key": value`.
    public static func format(_ bytes: [UInt8], indent: String = "  ") -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        let pad = Array(indent.utf8)
        var depth = 0
        var inString = false
        var escaped = false
        func newline() {
            out.append(0x0A)
            for _ in 0..<depth { out.append(contentsOf: pad) }
        }
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            defer { i += 1 }
            if inString {
                out.append(b)
                if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch b {
            case UInt8(ascii: "\""):
                inString = true
                out.append(b)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                out.append(b)
                // `{}` and `[]` stay on one line.
                if i + 1 < bytes.count, bytes[i + 1] == (b == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    out.append(bytes[i + 1])
                    i += 1
                } else {
                    depth += 1
                    newline()
                }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth = max(0, depth - 1)
                newline()
                out.append(b)
            case UInt8(ascii: ","):
                out.append(b)
                newline()
            case UInt8(ascii: ":"):
                out.append(contentsOf: [UInt8(ascii: ":"), UInt8(ascii: " ")])
            case 0x20, 0x09, 0x0A, 0x0D:
                break
            default:
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
