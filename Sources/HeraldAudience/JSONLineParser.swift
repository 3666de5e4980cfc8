// Why a hand-written JSON parser on bytes: one NDJSON line per recipient, millions of lines.
// JSONSerialization builds NSDictionary/NSNumber trees (bridged, allocated per value) and loses
// number literals to Double; Codable needs a fixed schema. Audience rows are flat-ish objects
// whose fields we want by dotted path with numbers kept as written, so we scan the line's bytes
// once and write each value's bytes into the row as we meet it (RFC 8259 grammar, strict).

internal import HeraldCore

/// Parses one NDJSON line (a JSON object) into a row's fields. Nested objects are flattened to
/// dotted keys (`user.first_name`) and also kept whole as compact JSON under their own key, as
/// are arrays, so a template can use either. Values are kept as bytes until read (`RecordFields`).
struct JSONLineParser {
    enum Failure: Error {
        /// Not JSON, or not an object; the message names the column (1-based byte).
        case syntax(String)
        /// A string is not valid UTF-8; `field` is the dotted key it belongs to.
        case badUTF8(field: String, detail: String)
    }

    /// Deeper nesting is refused rather than recursed into (a hostile line must not overflow the stack).
    static let maximumDepth = 64

    /// Scratch for unescaping strings and the fields' builder, reused across lines.
    private var scratch: [UInt8] = []
    private var row = JSONRowBuilder()

    init() { scratch.reserveCapacity(1024) }

    mutating func parse(_ line: UnsafeBufferPointer<UInt8>) throws(Failure) -> RecordFields {
        guard let base = line.baseAddress else { throw .syntax("empty line") }
        row.reset()
        var cursor = JSONCursor(p: base, n: line.count, scratch: scratch, row: row)
        defer {
            swap(&scratch, &cursor.scratch)
            swap(&row, &cursor.row)
        }
        cursor.skipSpace()
        guard cursor.i < cursor.n, cursor.p[cursor.i] == UInt8(ascii: "{") else {
            let what = cursor.i < cursor.n ? "starts with \(JSONCursor.show(cursor.p[cursor.i]))" : "is blank"
            throw .syntax("line is not a JSON object (it \(what) at column \(cursor.i + 1))")
        }
        try cursor.object(prefix: nil, errorPath: nil, depth: 1, store: true)
        cursor.skipSpace()
        guard cursor.i == cursor.n else { throw cursor.fail("unexpected text after the object") }
        return cursor.row.finish()
    }
}
