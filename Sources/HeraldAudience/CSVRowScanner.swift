// Why this CSV parser is hand-written on bytes:
// a campaign audience is millions of rows, and reading it must keep up with inflate
// (`zcat | wc -l` is the floor). The Swift CSV packages (CSV.swift, SwiftCSV) work on
// `String`/`Character`, paying grapheme breaking per character and an allocation per field
// before we even look at the value. Here a row is scanned in place in the decoded buffer as
// byte offsets; once the row is known to be complete its values are checked for UTF-8 and copied
// into one allocation (`RecordFields`), and a field's String is made only when it is read
// (Benchmarks/audience_bench.py compares it with `zcat | wc -l`). RFC 4180
// (https://www.rfc-editor.org/rfc/rfc4180) with the usual leniencies: LF or CRLF line ends, a
// configurable delimiter, quotes inside an unquoted field taken literally, text after a closing
// quote appended (as Python's csv module does).

/// Finds the fields of one CSV record in a byte buffer, without copying.
struct CSVRowScanner {
    enum Outcome {
        /// A complete record; `length` includes its line terminator.
        case row(length: Int)
        /// The record runs past the buffered bytes: fill and scan again.
        case needMore
        /// End of input inside a quoted field.
        case unterminatedQuote
    }

    private static let quote = UInt8(ascii: "\"")
    private static let lf = UInt8(ascii: "\n")
    private static let cr = UInt8(ascii: "\r")

    let delimiter: UInt8
    /// Field byte ranges relative to the start of the last scanned record, reused across rows.
    /// One entry per field, so a row costs one append per field, not three.
    private struct Field {
        var start: Int
        var end: Int
        /// Began with a quote (and so needs unquoting).
        var quoted: Bool
    }
    private var fields: [Field] = []
    /// Line feeds inside quoted fields of the last record, for the next record's line number.
    private(set) var embeddedNewlines = 0
    /// Scratch for unquoting, reused across rows.
    private var unquoted: [UInt8] = []

    init(delimiter: UInt8) {
        self.delimiter = delimiter
        fields.reserveCapacity(32)
        unquoted.reserveCapacity(1024)
    }

    var fieldCount: Int { fields.count }

    /// Bytes of all fields as written (quotes included): at least their unquoted length.
    var rawLength: Int {
        var total = 0
        for field in fields { total += field.end - field.start }
        return total
    }

    /// True for a line with nothing on it (blank lines are skipped, not rows of one empty field).
    var isBlankLine: Bool { fields.count == 1 && !fields[0].quoted && fields[0].start == fields[0].end }

    /// Scans one record starting at `p`. Rescans from the start after `.needMore`; a record
    /// crosses a buffer boundary once per 256 KiB, so resuming mid-field is not worth its state.
    mutating func scan(_ p: UnsafePointer<UInt8>, count: Int, atEOF: Bool) -> Outcome {
        fields.removeAll(keepingCapacity: true)
        embeddedNewlines = 0
        let delimiter = self.delimiter
        let delimiterWord = Self.ones &* UInt64(delimiter)
        var i = 0
        while true {
            let fieldStart = i
            var isQuoted = false
            if i < count && p[i] == Self.quote {
                isQuoted = true
                i += 1
                while true {
                    guard i < count else { return atEOF ? .unterminatedQuote : .needMore }
                    let b = p[i]
                    if b == Self.quote {
                        if i + 1 < count {
                            if p[i + 1] == Self.quote { i += 2; continue }   // "" is a literal quote
                            i += 1                                            // the closing quote
                            break
                        }
                        if !atEOF { return .needMore }   // cannot tell " from "" yet
                        i += 1
                        break
                    }
                    if b == Self.lf { embeddedNewlines += 1 }
                    i += 1
                }
            }
            i = skipPlain(p, from: i, count: count, delimiterWord: delimiterWord)
            if i < count && p[i] == delimiter {
                append(fieldStart, i, isQuoted)
                i += 1
                continue
            }
            if i == count && !atEOF { return .needMore }
            var fieldEnd = i
            if fieldEnd > fieldStart && p[fieldEnd - 1] == Self.cr { fieldEnd -= 1 }
            append(fieldStart, fieldEnd, isQuoted)
            return .row(length: i < count ? i + 1 : i)
        }
    }

    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080
    private static let lfWord = ones &* 0x0A

    /// Index of the next delimiter or LF at or after `i` (or `count`). Eight bytes at a time:
    /// most of a row is plain field text, and tokens alone are 64 bytes.
    @inline(__always)
    private func skipPlain(_ p: UnsafePointer<UInt8>, from start: Int, count: Int, delimiterWord: UInt64) -> Int {
        var i = start
        let raw = UnsafeRawPointer(p)
        while i + 8 <= count {
            let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            // "Has a zero byte" bit trick on word XOR the pattern; the lowest flagged byte is
            // exact (false positives only occur above a true match).
            let a = word ^ delimiterWord, b = word ^ Self.lfWord
            let hits = ((a &- Self.ones) & ~a | (b &- Self.ones) & ~b) & Self.highs
            if hits != 0 { return i + hits.trailingZeroBitCount >> 3 }
            i += 8
        }
        while i < count {
            let b = p[i]
            if b == delimiter || b == Self.lf { return i }
            i += 1
        }
        return i
    }

    @inline(__always)
    private mutating func append(_ start: Int, _ end: Int, _ isQuoted: Bool) {
        fields.append(Field(start: start, end: end, quoted: isQuoted))
    }

    /// Calls `body` with field `index`'s value bytes: in place when unquoted, else unquoted
    /// into the scratch buffer (`""` inside quotes is one quote; text after the closing quote
    /// is kept verbatim).
    mutating func withField<R>(_ index: Int, in p: UnsafePointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        let field = fields[index]
        let start = field.start, end = field.end
        if !field.quoted { return body(UnsafeBufferPointer(start: p + start, count: end - start)) }
        unquoted.removeAll(keepingCapacity: true)
        var i = start + 1
        var inQuotes = true
        while i < end {
            let b = p[i]
            if inQuotes && b == Self.quote {
                if i + 1 < end && p[i + 1] == Self.quote {
                    unquoted.append(Self.quote)
                    i += 2
                    continue
                }
                inQuotes = false
            } else {
                unquoted.append(b)
            }
            i += 1
        }
        return unquoted.withUnsafeBufferPointer(body)
    }
}
