public import HeraldCore

/// Pull-based, streaming reader over one audience file (CSV or NDJSON, plain or gzip).
///
/// Constant memory: a 64 KiB read buffer, zlib's 32 KiB window, four 256 KiB read-ahead chunks
/// for gzip, and a 256 KiB decoded window that grows only for a single record longer than
/// that (to 16 MiB at most). Rows are yielded in file order; row-level problems are `.invalid`
/// events, file-level problems throw (after every row before the problem has been yielded).
///
/// Gzip files are inflated on a helper thread a few chunks ahead (see `InflateAhead`); it stops
/// when the reader is released. Not thread-safe and not Sendable: one task reads one file.
public final class AudienceFileReader {
    /// Total size of the file on disk (0 for a pipe).
    public let fileSize: Int
    /// Bytes of the file on disk consumed so far (compressed bytes for gzip), for progress.
    public var compressedBytesRead: Int { source.consumedBytes }
    /// `.csv` or `.ndjson`: the spec's format, or what `.auto` found.
    public let detectedFormat: AudienceFormat
    /// True when the file starts with the gzip magic bytes, whatever its name.
    public let isCompressed: Bool
    /// Records plus invalid rows yielded so far (the CSV header and blank lines are not rows).
    public internal(set) var rowsRead = 0

    let file: AudienceFile
    let spec: AudienceSpec
    let mapping: FieldMapping
    let source: DecodedSource
    let window: ByteWindow
    var csv: CSVRows
    var ndjson: NDJSONRows

    /// Opens the file, detects gzip by its magic bytes (1f 8b, not by the name: exports get
    /// renamed), detects the format when the spec says `.auto`, and for CSV reads the header.
    public init(file: AudienceFile, spec: AudienceSpec) throws(AudienceError) {
        self.file = file
        self.spec = spec
        mapping = FieldMapping(spec)
        let input = try FileInput(file: file)
        fileSize = input.fileSize
        let head = try input.sniff(minimum: 2)
        isCompressed = head.count >= 2 && head[0] == 0x1F && head[1] == 0x8B
        let source = try DecodedSource.make(input: input, compressed: isCompressed)
        self.source = source
        window = ByteWindow(fileName: file.name, source: source)
        csv = CSVRows(fileName: file.name, delimiter: spec.delimiter)
        ndjson = NDJSONRows(fileName: file.name)
        do throws(AudienceError) {
            try window.ensure(3, line: 1)
            if window.count >= 3, window.current[0] == 0xEF, window.current[1] == 0xBB, window.current[2] == 0xBF {
                window.start += 3   // UTF-8 BOM, as Excel writes it
            }
            switch spec.format {
            case .csv: detectedFormat = .csv
            case .ndjson: detectedFormat = .ndjson
            case .auto: detectedFormat = try Self.sniffFormat(window)
            }
            if detectedFormat == .csv { try csv.readHeader(window, mapping: mapping) }
        } catch {
            // deinit does not run for a half-initialized object: stop the read-ahead thread here.
            source.close()
            throw error
        }
    }

    deinit { source.close() }

    /// The next record or invalid row; nil at the end of the file.
    public func next() throws(AudienceError) -> AudienceEvent? {
        let event = detectedFormat == .ndjson
            ? try ndjson.next(window, mapping: mapping)
            : try csv.next(window, mapping: mapping)
        if event != nil {
            rowsRead += 1
        } else if rowsRead == 0 && !spec.allowEmpty {
            throw .noDataRows(file: file.name, format: detectedFormat)
        }
        return event
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
}
