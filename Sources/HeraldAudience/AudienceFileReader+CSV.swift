internal import HeraldCore

/// CSV rows: the header, then one event per record, with the physical line each starts on.
extension AudienceFileReader {
    /// Scans the next record in place. Returns its byte length, or nil at the end of the file;
    /// the scanner then holds the field ranges relative to `window.current`.
    private func scanRecord() throws(AudienceError) -> Int? {
        while true {
            if window.count == 0 {
                guard try window.fill(line: line) else { return nil }
            }
            switch csv.scan(window.current, count: window.count, atEOF: window.atEOF) {
            case .row(let length):
                return length
            case .needMore:
                _ = try window.fill(line: line)
            case .unterminatedQuote:
                throw .unterminatedQuote(file: file.name, line: line)
            }
        }
    }

    /// Reads the first non-blank record as the header. Column names are trimmed of spaces
    /// (`id, token` is a common hand-edited header); duplicates and bad UTF-8 are file errors.
    func readHeader() throws(AudienceError) {
        var headerLength: Int?
        while let length = try scanRecord() {
            if csv.isBlankLine {
                consume(length)
                continue
            }
            headerLength = length
            break
        }
        guard let headerLength else { throw .emptyFile(file: file.name) }
        var names: [String] = []
        var seen: Set<String> = []
        for index in 0..<csv.fieldCount {
            let name = csv.withField(index, in: window.current) { UTF8Text.string($0) }
            guard let name else {
                throw .badHeader(file: file.name, line: line, detail: "header column \(index + 1) is not valid UTF-8")
            }
            let trimmed = name.trimmingCharacters(in: " \t")
            guard seen.insert(trimmed).inserted else {
                throw .badHeader(file: file.name, line: line, detail: "header has column \"\(trimmed)\" twice")
            }
            names.append(trimmed)
        }
        guard let token = names.firstIndex(of: spec.tokenField) else {
            throw .missingTokenColumn(file: file.name, line: line, column: spec.tokenField, columns: names)
        }
        columns = names
        tokenColumn = token
        consume(headerLength)
    }

    /// Advances past a record and its lines.
    private func consume(_ length: Int) {
        window.start += length
        line += 1 + csv.embeddedNewlines
    }

    func nextCSV() throws(AudienceError) -> AudienceEvent? {
        while let length = try scanRecord() {
            let location = RowLocation(file: file.name, line: line)
            if csv.isBlankLine {
                consume(length)
                continue
            }
            let event = csvEvent(location: location)
            consume(length)
            rowsRead += 1
            return event
        }
        return nil
    }

    private func csvEvent(location: RowLocation) -> AudienceEvent {
        guard csv.fieldCount == columns.count else {
            return .invalid(InvalidRow(location: location, reason: .wrongFieldCount, field: "",
                                       detail: "expected \(columns.count) fields, found \(csv.fieldCount)"))
        }
        var fields = [String: FieldValue](minimumCapacity: columns.count)
        let p = window.current
        for index in 0..<columns.count {
            guard let value = csv.withField(index, in: p, { UTF8Text.string($0) }) else {
                let detail = csv.withField(index, in: p) { UTF8Text.problem($0) }
                return .invalid(InvalidRow(location: location, reason: .badUTF8, field: columns[index], detail: detail))
            }
            fields[columns[index]] = .string(value)
        }
        return event(fields: fields, location: location)
    }
}

private extension String {
    func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
