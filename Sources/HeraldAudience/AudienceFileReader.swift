public import HeraldCore

/// Pull-based, streaming reader over one audience file (CSV or NDJSON, plain or gzip).
///
/// Constant memory: a 64 KiB read buffer, zlib's 32 KiB window, and a 256 KiB decoded window
/// that grows only for a single record longer than that (to 16 MiB at most). Rows are yielded
/// in file order; row-level problems are `.invalid` events, file-level problems throw.
///
/// Not thread-safe and not Sendable: one task reads one file.
public final class AudienceFileReader {
    /// Total size of the file on disk (0 for a pipe).
    public var fileSize: Int { input.fileSize }
    /// Bytes of the file on disk consumed so far (compressed bytes for gzip), for progress.
    public var compressedBytesRead: Int { inflater?.consumedBytes ?? input.bytesRead }
    /// `.csv` or `.ndjson`: the spec's format, or what `.auto` found.
    public let detectedFormat: AudienceFormat
    /// True when the file starts with the gzip magic bytes, whatever its name.
    public let isCompressed: Bool
    /// Records plus invalid rows yielded so far (the CSV header and blank lines are not rows).
    public internal(set) var rowsRead = 0

    let file: AudienceFile
    let spec: AudienceSpec
    let input: FileInput
    let inflater: GzipInflater?
    let window: ByteWindow
    /// Physical line (1-based) where the next record starts.
    var line = 1

    // CSV state: the header's columns and where the token is among them.
    var csv: CSVRowScanner
    var columns: [String] = []
    var tokenColumn = 0
    // NDJSON state.
    var json = JSONLineParser()

    /// Opens the file, detects gzip by its magic bytes (1f 8b, not by the name: exports get
    /// renamed), detects the format when the spec says `.auto`, and for CSV reads the header.
    public init(file: AudienceFile, spec: AudienceSpec) throws(AudienceError) {
        self.file = file
        self.spec = spec
        input = try FileInput(file: file)
        let head = try input.sniff(minimum: 2)
        isCompressed = head.count >= 2 && head[0] == 0x1F && head[1] == 0x8B
        inflater = isCompressed ? try GzipInflater(input: input) : nil
        window = ByteWindow(input: input, inflater: inflater)
        csv = CSVRowScanner(delimiter: spec.delimiter)

        try window.ensure(3, line: 1)
        if window.count >= 3, window.current[0] == 0xEF, window.current[1] == 0xBB, window.current[2] == 0xBF {
            window.start += 3   // UTF-8 BOM, as Excel writes it
        }
        switch spec.format {
        case .csv: detectedFormat = .csv
        case .ndjson: detectedFormat = .ndjson
        case .auto: detectedFormat = try Self.sniffFormat(window)
        }
        if detectedFormat == .csv { try readHeader() }
    }

    /// The next record or invalid row; nil at the end of the file.
    public func next() throws(AudienceError) -> AudienceEvent? {
        detectedFormat == .ndjson ? try nextNDJSON() : try nextCSV()
    }

    /// First non-whitespace byte `{` means NDJSON, anything else CSV. Reads ahead as needed
    /// without consuming, so line numbers stay right.
    private static func sniffFormat(_ window: ByteWindow) throws(AudienceError) -> AudienceFormat {
        var offset = 0
        while true {
            while offset < window.count {
                switch window.current[offset] {
                case 0x20, 0x09, 0x0D, 0x0A: offset += 1
                case UInt8(ascii: "{"): return .ndjson
                default: return .csv
                }
            }
            guard try window.fill(line: 1) else { return .csv }
        }
    }

    /// Checks the token field and builds the record, or says why the row is unusable.
    func event(fields: [String: FieldValue], location: RowLocation) -> AudienceEvent {
        let tokenField = spec.tokenField
        let raw: String
        switch fields[tokenField] {
        case .string(let s), .number(let s): raw = s
        case nil, .null:
            return .invalid(InvalidRow(location: location, reason: .missingToken, field: tokenField, detail: "no value for \"\(tokenField)\""))
        case .bool, .json:
            return .invalid(InvalidRow(location: location, reason: .invalidToken, field: tokenField, detail: "device token is not a string"))
        }
        switch DeviceToken.normalize(utf8: raw.utf8) {
        case .success(let token):
            return .record(AudienceRecord(location: location, token: token, fields: fields))
        case .failure(.empty):
            return .invalid(InvalidRow(location: location, reason: .missingToken, field: tokenField, detail: DeviceToken.Problem.empty.message))
        case .failure(let problem):
            return .invalid(InvalidRow(location: location, reason: .invalidToken, field: tokenField, detail: problem.message))
        }
    }
}
