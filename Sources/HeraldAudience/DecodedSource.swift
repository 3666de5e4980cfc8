/// Where a `ByteWindow` gets its decoded bytes: the plain file, zlib in line, or zlib on the
/// read-ahead thread.
enum DecodedSource {
    case plain(FileInput)
    case gzip(GzipInflater)
    case gzipAhead(InflateAhead)

    /// Opens the right source for a file whose first bytes have been sniffed. Gzip runs on its
    /// own thread where the platform gives us one, in line otherwise.
    static func make(input: FileInput, compressed: Bool) throws(AudienceError) -> DecodedSource {
        guard compressed else { return .plain(input) }
        let inflater = try GzipInflater(input: input)
        let ahead = InflateAhead(inflater: inflater)
        return ahead.start() ? .gzipAhead(ahead) : .gzip(inflater)
    }

    func read(into destination: UnsafeMutablePointer<UInt8>, count: Int) throws(AudienceError) -> Int {
        switch self {
        case .plain(let input): return try input.read(into: destination, count: count)
        case .gzip(let inflater): return try inflater.inflate(into: destination, count: count)
        case .gzipAhead(let ahead): return try ahead.read(into: destination, count: count)
        }
    }

    /// Bytes of the file on disk consumed so far, for progress.
    var consumedBytes: Int {
        switch self {
        case .plain(let input): return input.bytesRead
        case .gzip(let inflater): return inflater.consumedBytes
        case .gzipAhead(let ahead): return ahead.consumedBytes
        }
    }

    /// Stops the read-ahead thread early when the reader goes away before the end.
    func close() {
        if case .gzipAhead(let ahead) = self { ahead.cancel() }
    }
}
