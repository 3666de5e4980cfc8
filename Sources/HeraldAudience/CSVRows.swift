internal import HeraldCore

/// CSV rows of one file: the header, then one event per record with the physical line it
/// starts on. All per-row state lives in this struct so that the reader touches it with one
/// access per row (class properties cost a dynamic exclusivity check per access).
struct CSVRows {
    let fileName: String
    private var scanner: CSVRowScanner
    /// Header names in column order, and each name's column: `mapValues` over this dictionary
    /// gives every row its fields without hashing a key (its hash table layout is reused).
    private(set) var columns: [String] = []
    private var columnIndex: [String: Int] = [:]
    private var tokenColumn = 0
    /// This row's values by column, reused across rows.
    private var values: [FieldValue] = []
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
            throw .missingTokenColumn(file: fileName, line: line, column: mapping.token, columns: names)
        }
        for (key, column) in mapping.namedColumns where columnIndex[column] == nil {
            throw .missingColumn(file: fileName, line: line, column: column, key: key, columns: names)
        }
        columns = names
        tokenColumn = token
        values = Array(repeating: .null, count: names.count)
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

    private mutating func rowEvent(_ location: RowLocation, _ p: UnsafePointer<UInt8>, mapping: FieldMapping) -> AudienceEvent {
        guard scanner.fieldCount == columns.count else {
            return .invalid(InvalidRow(location: location, reason: .wrongFieldCount, field: "",
                                       detail: "expected \(columns.count) fields, found \(scanner.fieldCount)"))
        }
        var token = ""
        for index in 0..<columns.count {
            guard let value = scanner.withField(index, in: p, { UTF8Text.string($0) }) else {
                let detail = scanner.withField(index, in: p) { UTF8Text.problem($0) }
                return .invalid(InvalidRow(location: location, reason: .badUTF8, field: columns[index], detail: detail))
            }
            if index == tokenColumn { token = value }
            values[index] = .string(value)
        }
        let values = self.values
        let fields = columnIndex.mapValues { values[$0] }
        return TokenCheck.event(raw: token, fields: fields, location: location, mapping: mapping)
    }
}

private extension String {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
