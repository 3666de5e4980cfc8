/// The fields of one audience row, by name: `fields["first_name"]`, `fields["user.city"]`.
///
/// Why not a plain `[String: FieldValue]` for CSV rows: that builds a dictionary and a String per
/// field for every row, while a template reads two or three fields. A CSV row is instead kept as
/// its unquoted, already validated UTF-8 bytes in one array, with the file's header shared by all
/// its rows; a field's String is made only when someone reads it. NDJSON lines get the same
/// treatment (`JSONRowBuilder`), with their dotted paths stored per line since keys vary from
/// line to line.
public struct RecordFields: Sendable, Equatable {
    enum Storage: Sendable {
        case dictionary([String: FieldValue])
        case columns(CSVHeader, [UInt8])
        case json([UInt8])
    }

    let storage: Storage

    public init(_ dictionary: [String: FieldValue]) { storage = .dictionary(dictionary) }

    /// A CSV row: `row` is what `CSVHeader.makeRow` built.
    init(header: CSVHeader, row: [UInt8]) { storage = .columns(header, row) }

    /// An NDJSON line: `row` is what `JSONRowBuilder.finish` built.
    init(json row: [UInt8]) { storage = .json(row) }

    public subscript(name: String) -> FieldValue? {
        switch storage {
        case .dictionary(let d): return d[name]
        case .columns(let header, let row):
            guard let column = header.index[name] else { return nil }
            return .string(CSVHeader.value(column, in: row))
        case .json(let row): return JSONRowLayout.lookup(name, in: row)
        }
    }

    /// Every field, materialized (for tests and diagnostics, not the hot path).
    public var dictionary: [String: FieldValue] {
        switch storage {
        case .dictionary(let d): return d
        case .columns(let header, let row):
            var d: [String: FieldValue] = [:]
            for (name, column) in header.index { d[name] = .string(CSVHeader.value(column, in: row)) }
            return d
        case .json(let row): return JSONRowLayout.all(row)
        }
    }

    public static func == (a: RecordFields, b: RecordFields) -> Bool { a.dictionary == b.dictionary }
}

/// A CSV file's header: column names in order and each name's column, shared by the file's rows.
public final class CSVHeader: Sendable {
    public let columns: [String]
    let index: [String: Int]

    /// `columns` must be distinct (the reader rejects a header with a column twice).
    public init(columns: [String]) {
        self.columns = columns
        var index: [String: Int] = [:]
        for (i, name) in columns.enumerated() { index[name] = i }
        self.index = index
    }

    /// One row's fields, written value by value in column order by `fill`; the values must be
    /// valid UTF-8 (the reader checks) and at most `capacity` bytes in all. One allocation:
    /// `columns.count + 1` UInt32 offsets into the row, then the values back to back.
    public func makeRow(capacity: Int, _ fill: (inout CSVRowWriter) -> Void) -> RecordFields {
        let table = (columns.count + 1) * 4
        let row = [UInt8](unsafeUninitializedCapacity: table + capacity) { buffer, count in
            var writer = CSVRowWriter(base: buffer.baseAddress!, end: table)
            fill(&writer)
            precondition(writer.column == columns.count && writer.end <= table + capacity, "CSV row does not match its header")
            count = writer.end
        }
        return RecordFields(header: self, row: row)
    }

    static func value(_ column: Int, in row: [UInt8]) -> String {
        row.withUnsafeBufferPointer { bytes in
            let raw = UnsafeRawPointer(bytes.baseAddress!)
            let start = Int(raw.loadUnaligned(fromByteOffset: column * 4, as: UInt32.self))
            let end = Int(raw.loadUnaligned(fromByteOffset: column * 4 + 4, as: UInt32.self))
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }
}

/// Appends one CSV row's values for `CSVHeader.makeRow`.
public struct CSVRowWriter {
    @usableFromInline let base: UnsafeMutablePointer<UInt8>
    @usableFromInline var end: Int
    @usableFromInline var column = 0

    init(base: UnsafeMutablePointer<UInt8>, end: Int) {
        self.base = base
        self.end = end
        UnsafeMutableRawPointer(base).storeBytes(of: UInt32(end), as: UInt32.self)
    }

    /// The next column's value.
    @inlinable
    public mutating func append(_ value: UnsafeBufferPointer<UInt8>) {
        if let source = value.baseAddress { (base + end).update(from: source, count: value.count) }
        end += value.count
        column += 1
        UnsafeMutableRawPointer(base).storeBytes(of: UInt32(end), toByteOffset: column * 4, as: UInt32.self)
    }
}
