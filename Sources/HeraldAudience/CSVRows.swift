internal import HeraldCore

/// CSV rows of one file: the header, then one event per record with the physical line it
/// starts on. All per-row state lives in this struct so that the reader touches it with one
/// access per row (class properties cost a dynamic exclusivity check per access).
struct CSVRows {
    let fileName: String
    private var scanner: CSVRowScanner
    /// Header names in column order, shared by every row's `RecordFields`.
    private var header = CSVHeader(columns: [])
    private var tokenColumn = 0
    /// Columns of `id_field` and `registered_at_field`, read straight from the row's bytes.
    private var idColumn: Int?
    private var registeredAtColumn: Int?
    private var appColumn: Int?
    private var environmentColumn: Int?
    /// Physical line (1-based) where the next record starts.
    private(set) var line = 1

    init(fileName: String, delimiter: UInt8) {
        self.fileName = fileName
        scanner = CSVRowScanner(delimiter: delimiter)
    }

    /// Scans the next record in place. Returns its byte length, or nil at the end of the file;
    /// the scanner then holds the field ranges relative to `window.current`.
    private mutating func scanRecord(_ window: ByteWindow) throws(AudienceError) -> Int? {
        while true {
            if window.count == 0 {
                guard try window.fill(line: line) else { return nil }
            }
            switch scanner.scan(window.current, count: window.count, atEOF: window.atEOF) {
            case .row(let length):
                return length
            case .needMore:
                _ = try window.fill(line: line)
            case .unterminatedQuote:
                throw .unterminatedQuote(file: fileName, line: line)
            }
        }
    }

    /// Advances past a record and its lines.
    private mutating func consume(_ length: Int, _ window: ByteWindow) {
        window.start += length
        line += 1 + scanner.embeddedNewlines
    }

    /// Reads the first non-blank record as the header. Column names are trimmed of spaces
    /// (`id, token` is a common hand-edited header); duplicates and bad UTF-8 are file errors.
    mutating func readHeader(_ window: ByteWindow, mapping: FieldMapping) throws(AudienceError) {
        var headerLength: Int?
        while let length = try scanRecord(window) {
            if scanner.isBlankLine {
                consume(length, window)
                continue
            }
            headerLength = length
            break
        }
        guard let headerLength else { throw .emptyFile(file: fileName) }
        var names: [String] = []
        var columnIndex: [String: Int] = [:]
        for index in 0..<scanner.fieldCount {
            guard let name = scanner.withField(index, in: window.current, { UTF8Text.string($0) }) else {
                throw .badHeader(file: fileName, line: line, detail: "header column \(index + 1) is not valid UTF-8")
            }
            let trimmed = name.trimmingSpaces()
            guard columnIndex.updateValue(index, forKey: trimmed) == nil else {
                throw .badHeader(file: fileName, line: line, detail: "header has column \"\(trimmed)\" twice")
            }
            names.append(trimmed)
        }
        guard let token = columnIndex[mapping.token] else {
            if mapping.channel {
                throw .missingColumn(file: fileName, line: line, column: mapping.token, key: "audience.channel_field", columns: names)
            }
            throw .missingTokenColumn(file: fileName, line: line, column: mapping.token, columns: names)
        }
        for (key, column) in mapping.namedColumns where columnIndex[column] == nil {
            throw .missingColumn(file: fileName, line: line, column: column, key: key, columns: names)
        }
        for (column, usedBy) in mapping.templateColumns where columnIndex[column] == nil {
            throw .missingColumn(file: fileName, line: line, column: column, key: "\(usedBy), a placeholder with no default", columns: names)
        }
        header = CSVHeader(columns: names)
        tokenColumn = token
        idColumn = mapping.id.flatMap { columnIndex[$0] }
        registeredAtColumn = mapping.registeredAt.flatMap { columnIndex[$0] }
        appColumn = mapping.app.flatMap { columnIndex[$0] }
        environmentColumn = mapping.environment.flatMap { columnIndex[$0] }
        consume(headerLength, window)
    }

    /// The next row's event, or nil at the end of the file. Blank lines are skipped.
    mutating func next(_ window: ByteWindow, mapping: FieldMapping) throws(AudienceError) -> AudienceEvent? {
        while let length = try scanRecord(window) {
            if scanner.isBlankLine {
                consume(length, window)
                continue
            }
            let event = rowEvent(RowLocation(file: fileName, line: line), window.current, mapping: mapping)
            consume(length, window)
            return event
        }
        return nil
    }

    /// Checks every value's UTF-8 while copying the row's values into one `RecordFields`
    /// allocation; Strings are made only for the token here, and for other fields when read.
    private mutating func rowEvent(_ location: RowLocation, _ p: UnsafePointer<UInt8>, mapping: FieldMapping) -> AudienceEvent {
        let count = header.columns.count
        guard scanner.fieldCount == count else {
            return .invalid(InvalidRow(location: location, reason: .wrongFieldCount, field: "",
                                       detail: "expected \(count) fields, found \(scanner.fieldCount)"))
        }
        var badColumn: Int?
        let fields = header.makeRow(capacity: scanner.rawLength) { writer in
            for index in 0..<count {
                scanner.withField(index, in: p) { bytes in
                    if badColumn == nil, !UTF8Text.isValid(bytes) { badColumn = index }
                    writer.append(bytes)
                }
            }
        }
        if let badColumn {
            let detail = scanner.withField(badColumn, in: p) { UTF8Text.problem($0) }
            return .invalid(InvalidRow(location: location, reason: .badUTF8, field: header.columns[badColumn], detail: detail))
        }
        // Device tokens keep their own closure: the reader's hottest call, specialized for it alone.
        let token = mapping.channel ? scanner.withField(tokenColumn, in: p) { TokenCheck.channelId(String(decoding: $0, as: UTF8.self)) }
            : scanner.withField(tokenColumn, in: p) { TokenCheck.token($0) }
        var carried = FieldMapping.Carried()
        if let idColumn { carried.recipientId = scanner.withField(idColumn, in: p) { Self.text($0) } }
        if let registeredAtColumn { carried.registeredAt = scanner.withField(registeredAtColumn, in: p) { Self.text($0) }.map(FieldValue.string) }
        if let appColumn { carried.app = scanner.withField(appColumn, in: p) { Self.text($0) } }
        if let environmentColumn { carried.environment = scanner.withField(environmentColumn, in: p) { Self.text($0) } }
        return TokenCheck.event(token, fields: fields, location: location, mapping: mapping, carried: carried)
    }

    /// A validated value as a String; nil when empty ("no value").
    private static func text(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    /// Without the spaces and tabs around it (CSV header names, channel ids).
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
