internal import HeraldCore

/// The decoded (inflated, or plain) bytes of an audience file, in one buffer that the CSV and
/// NDJSON parsers scan in place.
///
/// Constant memory: the buffer starts at 256 KiB and only grows when a single record does not
/// fit, up to `maximumCapacity`; a longer record is an error, not an unbounded allocation
/// (one unclosed quote would otherwise pull the rest of a multi-GB file into memory).
final class ByteWindow {
    static let initialCapacity = 256 * 1024
    static let maximumCapacity = 16 * 1024 * 1024

    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var capacity: Int
    /// First byte not yet consumed by a parser.
    var start = 0
    /// One past the last decoded byte.
    private(set) var end = 0
    /// The source is exhausted: `[start, end)` is all that is left.
    private(set) var atEOF = false

    private let fileName: String
    private let source: DecodedSource

    init(fileName: String, source: DecodedSource) {
        self.fileName = fileName
        self.source = source
        capacity = Self.initialCapacity
        base = .allocate(capacity: capacity)
    }

    deinit { base.deallocate() }

    var count: Int { end - start }
    var current: UnsafePointer<UInt8> { UnsafePointer(base + start) }

    /// Reads more bytes after `end`, first moving the unconsumed bytes to the front (so offsets
    /// relative to `start` stay valid, absolute pointers do not). Returns false at end of input.
    /// `line` is only for the error when one record outgrows the buffer.
    func fill(line: Int) throws(AudienceError) -> Bool {
        if atEOF { return false }
        if start > 0 {
            let remaining = end - start
            if remaining > 0 { base.update(from: base + start, count: remaining) }
            start = 0
            end = remaining
        }
        if end == capacity {
            guard capacity < Self.maximumCapacity else {
                throw .recordTooLong(file: fileName, line: line, limit: Self.maximumCapacity)
            }
            let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: min(capacity * 2, Self.maximumCapacity))
            bigger.update(from: base, count: end)
            base.deallocate()
            base = bigger
            capacity = min(capacity * 2, Self.maximumCapacity)
        }
        let n = try source.read(into: base + end, count: capacity - end)
        if n == 0 {
            atEOF = true
            return false
        }
        end += n
        return true
    }

    /// Ensures at least `minimum` unconsumed bytes are buffered, unless the input ends first.
    func ensure(_ minimum: Int, line: Int) throws(AudienceError) {
        while count < minimum, try fill(line: line) {}
    }
}
