/// One NDJSON line's fields in one allocation, for `RecordFields`.
///
/// Why not a `[String: FieldValue]`: per line it costs a String for every key path and value, a
/// hash of every key and a dictionary, more than parsing the line, for the two or three fields a
/// template reads. Here the parser writes each field's dotted path and value bytes
/// (unescaped, validated UTF-8) back to back, with a small table; a lookup compares the wanted
/// name with the few paths of the line, and makes the String only for the field asked for.
///
/// Layout: UInt32 entry count, then per entry five UInt32 (path start, path end, value start,
/// value end, kind), then the bytes; offsets count from the start of the bytes.
enum JSONRowLayout {
    static let entryWords = 5

    static func lookup(_ name: String, in row: [UInt8]) -> FieldValue? {
        var name = name
        return name.withUTF8 { wanted in
            row.withUnsafeBytes { raw -> FieldValue? in
                let count = Int(raw.loadUnaligned(as: UInt32.self))
                let area = 4 + count * entryWords * 4
                // Last first: with a key given twice, the later one wins, as in a JSON object.
                var entry = count - 1
                while entry >= 0 {
                    let base = 4 + entry * entryWords * 4
                    let start = area + Int(raw.loadUnaligned(fromByteOffset: base, as: UInt32.self))
                    let end = area + Int(raw.loadUnaligned(fromByteOffset: base + 4, as: UInt32.self))
                    if end - start == wanted.count,
                       wanted.count == 0 || memcmp(raw.baseAddress! + start, wanted.baseAddress!, wanted.count) == 0 {
                        return value(entry, raw, area: area)
                    }
                    entry -= 1
                }
                return nil
            }
        }
    }

    static func all(_ row: [UInt8]) -> [String: FieldValue] {
        row.withUnsafeBytes { raw in
            var d: [String: FieldValue] = [:]
            let count = Int(raw.loadUnaligned(as: UInt32.self))
            let area = 4 + count * entryWords * 4
            for entry in 0..<count {
                let base = 4 + entry * entryWords * 4
                let start = area + Int(raw.loadUnaligned(fromByteOffset: base, as: UInt32.self))
                let end = area + Int(raw.loadUnaligned(fromByteOffset: base + 4, as: UInt32.self))
                d[String(decoding: UnsafeRawBufferPointer(rebasing: raw[start..<end]), as: UTF8.self)] = value(entry, raw, area: area)
            }
            return d
        }
    }

    private static func value(_ entry: Int, _ raw: UnsafeRawBufferPointer, area: Int) -> FieldValue {
        let base = 4 + entry * entryWords * 4
        let start = area + Int(raw.loadUnaligned(fromByteOffset: base + 8, as: UInt32.self))
        let end = area + Int(raw.loadUnaligned(fromByteOffset: base + 12, as: UInt32.self))
        let kind = JSONRowBuilder.Kind(rawValue: raw.loadUnaligned(fromByteOffset: base + 16, as: UInt32.self)) ?? .null
        let text = { String(decoding: UnsafeRawBufferPointer(rebasing: raw[start..<end]), as: UTF8.self) }
        switch kind {
        case .string: return .string(text())
        case .number: return .number(text())
        case .true: return .bool(true)
        case .false: return .bool(false)
        case .null: return .null
        case .json: return .json(text())
        }
    }
}

private func memcmp(_ a: UnsafeRawPointer, _ b: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    var k = 0
    while k < count {
        let x = a.load(fromByteOffset: k, as: UInt8.self), y = b[k]
        if x != y { return x < y ? -1 : 1 }
        k += 1
    }
    return 0
}

/// Builds one NDJSON line's `RecordFields`; reused from line to line, so its buffers are
/// allocated once per file. Offsets are positions in its byte area. Inlinable: the parser calls
/// it for every value and path, and a cross-module call would be paid on every byte read.
public struct JSONRowBuilder {
    public enum Kind: UInt32, Sendable { case string, number, `true`, `false`, null, json }

    @usableFromInline var entries: [UInt32] = []
    @usableFromInline var bytes: [UInt8] = []

    public init() {
        entries.reserveCapacity(16 * JSONRowLayout.entryWords)
        bytes.reserveCapacity(1024)
    }

    @inlinable
    public mutating func reset() {
        entries.removeAll(keepingCapacity: true)
        bytes.removeAll(keepingCapacity: true)
    }

    /// Where the next appended byte goes.
    @inlinable
    public var position: Int { bytes.count }

    @inlinable
    public mutating func append(_ value: UnsafeBufferPointer<UInt8>) { bytes.append(contentsOf: value) }

    @inlinable
    public mutating func append(_ byte: UInt8) { bytes.append(byte) }

    /// Appends `prefix.key` (or `key` alone at the top level) and returns where it is.
    @inlinable
    public mutating func appendPath(prefix: Range<Int>?, key: UnsafeBufferPointer<UInt8>) -> Range<Int> {
        let start = bytes.count
        if let prefix {
            bytes.reserveCapacity(bytes.count + prefix.count + 1 + key.count)
            for k in prefix { bytes.append(bytes[k]) }
            bytes.append(UInt8(ascii: "."))
        }
        bytes.append(contentsOf: key)
        return start..<bytes.count
    }

    /// Records a field: its path and value are byte ranges appended earlier.
    @inlinable
    public mutating func add(path: Range<Int>, kind: Kind, value: Range<Int>) {
        entries.append(UInt32(truncatingIfNeeded: path.lowerBound))
        entries.append(UInt32(truncatingIfNeeded: path.upperBound))
        entries.append(UInt32(truncatingIfNeeded: value.lowerBound))
        entries.append(UInt32(truncatingIfNeeded: value.upperBound))
        entries.append(kind.rawValue)
    }

    /// Text of a range, for error messages (the field a bad value belongs to).
    public func text(_ range: Range<Int>) -> String {
        String(decoding: bytes[range], as: UTF8.self)
    }

    /// The line's fields in one allocation.
    public func finish() -> RecordFields {
        let table = 4 + entries.count * 4
        let row = [UInt8](unsafeUninitializedCapacity: table + bytes.count) { buffer, count in
            let base = buffer.baseAddress!
            UnsafeMutableRawPointer(base).storeBytes(of: UInt32(entries.count / JSONRowLayout.entryWords), as: UInt32.self)
            entries.withUnsafeBytes { words in
                UnsafeMutableRawPointer(base + 4).copyMemory(from: words.baseAddress!, byteCount: words.count)
            }
            bytes.withUnsafeBufferPointer { area in
                if let source = area.baseAddress { (base + table).update(from: source, count: area.count) }
            }
            count = table + bytes.count
        }
        return RecordFields(json: row)
    }
}
