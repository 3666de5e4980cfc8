import Foundation
import GRDB

/// How a staged row keeps its rendered payload: as copies of byte runs from a reference payload
/// of the same run (`payload_reference`, one row per reference) and the bytes that differ.
///
/// Why: payloads rendered from one template share most of their bytes (keys, literal text,
/// constant values); only the placeholders' values differ. Stored whole, the payload is most of
/// a staged row (310 of ~512 bytes in the benchmark audience), and every staged byte is written
/// twice (WAL, then checkpoint) on the run's critical path before the first push. Kept as
/// differences from a reference, the same payload takes 32 bytes on average.
///
/// Why not zlib with the reference as a preset dictionary: one deflate stream per row (reset,
/// dictionary, compress) measured 5.6-6.6 µs per payload of this kind at level 1 (33.5 bytes out),
/// 6 s more per million recipients on the thread that records the audience; this encoding, a
/// 4-byte hash probe per byte against one reference and no state between rows, costs well under
/// a microsecond.
///
/// Encoded form (the `payload` column of a row whose `payload_reference` is set): a varint of the
/// decoded length, then operations until the end: a varint `n`; `n` even: `n >> 1` bytes follow,
/// taken as they are; `n` odd: `n >> 1` bytes are copied from the reference, from the offset given
/// by the varint after it. Varints are little-endian base 128 (7 bits a byte, high bit: more).
/// A row whose `payload_reference` is NULL (any row written before this format, or a payload that
/// shares too little with the reference) holds its payload as it is.
struct PayloadReference: Sendable {
    /// The reference's row in `payload_reference`.
    let id: Int64
    let bytes: [UInt8]
    /// For each 4-byte hash, the first offset in `bytes` where those 4 bytes start, or -1.
    private let heads: [Int32]

    private static let hashBits = 10
    /// Shorter runs cost more as a copy (its length and offset) than as bytes.
    private static let minimumCopy = 4

    init(id: Int64, bytes: [UInt8]) {
        self.id = id
        self.bytes = bytes
        var heads = [Int32](repeating: -1, count: 1 << Self.hashBits)
        if bytes.count >= Self.minimumCopy {
            bytes.withUnsafeBufferPointer { b in
                for offset in 0...(b.count - Self.minimumCopy) {
                    let h = Self.hash(Self.word(b, offset))
                    if heads[h] < 0 { heads[h] = Int32(offset) }
                }
            }
        }
        self.heads = heads
    }

    /// `payload` as copies from the reference and literal bytes, appended to `out`; false (and
    /// `out` as it was) when that would not be smaller than the payload itself. The result is
    /// decoded again (into `scratch`) before it is accepted, so a payload is only ever kept in a
    /// form that gives it back byte for byte.
    func encode(_ payload: [UInt8], into out: inout [UInt8], scratch: inout [UInt8]) -> Bool {
        let start = out.count
        Self.appendVarint(payload.count, to: &out)
        bytes.withUnsafeBufferPointer { ref in
            payload.withUnsafeBufferPointer { p in
                var literalStart = 0
                var i = 0
                while i + Self.minimumCopy <= p.count {
                    let candidate = Int(heads[Self.hash(Self.word(p, i))])
                    guard candidate >= 0, Self.word(ref, candidate) == Self.word(p, i) else {
                        i += 1
                        continue
                    }
                    var from = candidate, at = i
                    var length = Self.minimumCopy + Self.commonPrefix(ref, from + Self.minimumCopy, p, at + Self.minimumCopy)
                    // The run may start before the probe that found it, inside the pending literal.
                    while at > literalStart, from > 0, ref[from - 1] == p[at - 1] { at -= 1; from -= 1; length += 1 }
                    Self.appendLiteral(p, literalStart..<at, to: &out)
                    Self.appendVarint(length << 1 | 1, to: &out)
                    Self.appendVarint(from, to: &out)
                    i = at + length
                    literalStart = i
                }
                Self.appendLiteral(p, literalStart..<p.count, to: &out)
            }
        }
        scratch.removeAll(keepingCapacity: true)
        var fits = out.count - start < payload.count
        if fits {
            fits = out.withUnsafeBytes { Self.decode(UnsafeRawBufferPointer(rebasing: $0[start...]), reference: bytes, into: &scratch) }
                && scratch.count == payload.count
                && scratch.withUnsafeBytes { a in payload.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 } }
        }
        if !fits { out.removeSubrange(start...) }
        return fits
    }

    /// The payload `encoded` stands for, or nil if it is not a well-formed encoding against
    /// `reference` (a copy outside the reference, a truncated operation, a length that does not add up).
    static func decode(_ encoded: UnsafeRawBufferPointer, reference: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        return decode(encoded, reference: reference, into: &out) ? out : nil
    }

    /// `decode`, appending to `out`; false if `encoded` is not well-formed (`out` then holds part of it).
    static func decode(_ encoded: UnsafeRawBufferPointer, reference: [UInt8], into out: inout [UInt8]) -> Bool {
        var at = 0
        guard let total = readVarint(encoded, &at), total <= 1 << 24 else { return false }
        let end = out.count + total
        out.reserveCapacity(end)
        return reference.withUnsafeBytes { ref in
            while at < encoded.count {
                guard let op = readVarint(encoded, &at) else { return false }
                let length = op >> 1
                guard length <= end - out.count else { return false }
                if op & 1 == 1 {
                    guard let from = readVarint(encoded, &at), from <= ref.count, length <= ref.count - from else { return false }
                    out.append(contentsOf: UnsafeRawBufferPointer(rebasing: ref[from..<from + length]))
                } else {
                    guard length <= encoded.count - at else { return false }
                    out.append(contentsOf: UnsafeRawBufferPointer(rebasing: encoded[at..<at + length]))
                    at += length
                }
            }
            return out.count == end
        }
    }

    /// How many bytes `a` from `i` and `b` from `j` have in common, 8 at a time.
    private static func commonPrefix(_ a: UnsafeBufferPointer<UInt8>, _ i: Int, _ b: UnsafeBufferPointer<UInt8>, _ j: Int) -> Int {
        let limit = min(a.count - i, b.count - j)
        var n = 0
        while n + 8 <= limit {
            let x = UnsafeRawBufferPointer(a).loadUnaligned(fromByteOffset: i + n, as: UInt64.self)
                ^ UnsafeRawBufferPointer(b).loadUnaligned(fromByteOffset: j + n, as: UInt64.self)
            if x != 0 { return n + x.littleEndian.trailingZeroBitCount / 8 }
            n += 8
        }
        while n < limit, a[i + n] == b[j + n] { n += 1 }
        return n
    }

    private static func word(_ b: UnsafeBufferPointer<UInt8>, _ offset: Int) -> UInt32 {
        UnsafeRawBufferPointer(b).loadUnaligned(fromByteOffset: offset, as: UInt32.self)
    }

    private static func hash(_ word: UInt32) -> Int {
        Int((word &* 2_654_435_761) >> UInt32(32 - hashBits))
    }

    private static func appendLiteral(_ p: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, to out: inout [UInt8]) {
        guard !range.isEmpty else { return }
        appendVarint(range.count << 1, to: &out)
        out.append(contentsOf: UnsafeBufferPointer(rebasing: p[range]))
    }

    static func appendVarint(_ value: Int, to out: inout [UInt8]) {
        if value < 0x80 { out.append(UInt8(value)); return }
        var v = UInt(value)
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    /// Up to 4 bytes (28 bits): no payload, offset or length comes near that.
    static func readVarint(_ b: UnsafeRawBufferPointer, _ at: inout Int) -> Int? {
        var value = 0
        var shift = 0
        while at < b.count, shift < 28 {
            let byte = b[at]
            at += 1
            value |= Int(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }
}

/// The payloads of claimed rows, decoded against their references, each reference read once per claim.
struct PayloadReferences {
    let db: Database
    /// The state file, for the error.
    let path: String
    private var loaded: [Int64: [UInt8]] = [:]

    init(db: Database, path: String) {
        self.db = db
        self.path = path
    }

    /// The payload of a staged row whose `payload` column holds `stored` and whose
    /// `payload_reference` is `reference`.
    mutating func payload(_ stored: UnsafeRawBufferPointer, reference: Int64?, seq: Int64) throws -> [UInt8] {
        guard let reference else { return Array(stored) }
        if loaded[reference] == nil {
            let bytes = try Data.fetchOne(db.cachedStatement(sql: "SELECT bytes FROM payload_reference WHERE id = ?"), arguments: [reference])
            loaded[reference] = bytes.map { [UInt8]($0) }
        }
        guard let bytes = loaded[reference], let payload = PayloadReference.decode(stored, reference: bytes) else {
            throw StateError(path: path, message: "the staged payload of recipient \(seq) cannot be read back (payload reference \(reference)): "
                                 + "the state file was changed outside herald")
        }
        return payload
    }
}
