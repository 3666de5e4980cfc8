import Foundation
import GRDB
import Synchronization

/// How a staged row keeps its rendered payload: as copies of byte runs from a reference payload
/// of the same run (`payload_reference`, one row per reference) and the bytes that differ.
///
/// Why: payloads rendered from one template share most of their bytes (keys, literal text,
/// constant values); only the placeholders' values differ. Stored whole, the payload is most of
/// a staged row, and every staged byte is written twice (WAL, then checkpoint) on the run's
/// critical path before the first push. Kept as differences from a reference, the same payload
/// takes a small fraction of its size.
///
/// Why not zlib with the reference as a preset dictionary: one deflate stream per row (reset,
/// dictionary, compress) saves about as many bytes but costs several times the CPU of this
/// encoding (a 4-byte hash probe per byte against one reference, no state between rows), on the
/// thread that records the audience. The figures behind this choice are in CHANGELOG.md; what a
/// push costs now, staging included: docs/benchmarks.md#instructions-per-push.
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
            bytes.withUnsafeBytes { b in
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
    /// decoded again (in `scratch`) and compared before it is accepted, so a payload is only ever
    /// kept in a form that gives it back byte for byte.
    func encode(_ payload: [UInt8], into out: inout [UInt8], scratch: inout [UInt8]) -> Bool {
        // The encoding goes to the scratch's first `payload.count` bytes (it is refused as soon as
        // it would fill them), its check to the next `payload.count`.
        if scratch.count < 2 * payload.count { scratch = [UInt8](repeating: 0, count: 2 * payload.count) }
        let length: Int? = bytes.withUnsafeBytes { ref in
            payload.withUnsafeBytes { p in
                scratch.withUnsafeMutableBytes { buffer in
                    var w = Writer(UnsafeMutableRawBufferPointer(rebasing: buffer[..<p.count]))
                    guard encode(p, reference: ref, to: &w), w.count < p.count else { return nil }
                    let check = UnsafeMutableRawBufferPointer(rebasing: buffer[p.count..<2 * p.count])
                    guard Self.decode(UnsafeRawBufferPointer(rebasing: buffer[..<w.count]), reference: ref, into: check) == p.count,
                          memcmp(check.baseAddress!, p.baseAddress!, p.count) == 0 else { return nil }
                    return w.count
                }
            }
        }
        guard let length else { return false }
        scratch.withUnsafeBufferPointer { out.append(contentsOf: UnsafeBufferPointer(rebasing: $0[..<length])) }
        return true
    }

    /// The encoding proper; false when it would not fit `w` (be no smaller than the payload).
    private func encode(_ p: UnsafeRawBufferPointer, reference ref: UnsafeRawBufferPointer, to w: inout Writer) -> Bool {
        guard p.count > 0, w.varint(p.count) else { return false }
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
            guard w.literal(p, literalStart..<at), w.varint(length << 1 | 1), w.varint(from) else { return false }
            i = at + length
            literalStart = i
        }
        return w.literal(p, literalStart..<p.count)
    }

    /// The payload `encoded` stands for, or nil if it is not a well-formed encoding against
    /// `reference` (a copy outside the reference, a truncated operation, a length that does not add up).
    static func decode(_ encoded: UnsafeRawBufferPointer, reference: [UInt8]) -> [UInt8]? {
        var at = 0
        guard let total = readVarint(encoded, &at), total <= 1 << 24 else { return nil }
        var valid = false
        let out = [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            let written = reference.withUnsafeBytes { decode(encoded, reference: $0, into: UnsafeMutableRawBufferPointer(buffer)) }
            valid = written == total
            count = valid ? total : 0
        }
        return valid ? out : nil
    }

    /// Decodes `encoded` into `dest`; the payload's length, or nil if `encoded` is not well-formed
    /// or its payload is longer than `dest`.
    static func decode(_ encoded: UnsafeRawBufferPointer, reference ref: UnsafeRawBufferPointer,
                       into dest: UnsafeMutableRawBufferPointer) -> Int? {
        var at = 0
        guard let total = readVarint(encoded, &at), total <= dest.count else { return nil }
        var n = 0
        while at < encoded.count {
            guard let op = readVarint(encoded, &at) else { return nil }
            let length = op >> 1
            guard length <= total - n else { return nil }
            if op & 1 == 1 {
                guard let from = readVarint(encoded, &at), from <= ref.count, length <= ref.count - from else { return nil }
                if length > 0 { (dest.baseAddress! + n).copyMemory(from: ref.baseAddress! + from, byteCount: length) }
            } else {
                guard length <= encoded.count - at else { return nil }
                if length > 0 { (dest.baseAddress! + n).copyMemory(from: encoded.baseAddress! + at, byteCount: length) }
                at += length
            }
            n += length
        }
        return n == total ? n : nil
    }

    /// How many bytes `a` from `i` and `b` from `j` have in common, 8 at a time.
    private static func commonPrefix(_ a: UnsafeRawBufferPointer, _ i: Int, _ b: UnsafeRawBufferPointer, _ j: Int) -> Int {
        let limit = min(a.count - i, b.count - j)
        var n = 0
        while n + 8 <= limit {
            let x = a.loadUnaligned(fromByteOffset: i + n, as: UInt64.self) ^ b.loadUnaligned(fromByteOffset: j + n, as: UInt64.self)
            if x != 0 { return n + x.littleEndian.trailingZeroBitCount / 8 }
            n += 8
        }
        while n < limit, a[i + n] == b[j + n] { n += 1 }
        return n
    }

    private static func word(_ b: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        b.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
    }

    private static func hash(_ word: UInt32) -> Int {
        Int((word &* 2_654_435_761) >> UInt32(32 - hashBits))
    }

    /// Writes into a fixed buffer; every write says whether it fitted.
    private struct Writer {
        let buffer: UnsafeMutableRawBufferPointer
        private(set) var count = 0

        init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

        /// Little-endian base 128.
        mutating func varint(_ value: Int) -> Bool {
            var v = UInt(value)
            while true {
                guard count < buffer.count else { return false }
                if v < 0x80 {
                    buffer[count] = UInt8(v)
                    count += 1
                    return true
                }
                buffer[count] = UInt8(truncatingIfNeeded: v) | 0x80
                count += 1
                v >>= 7
            }
        }

        /// An operation of literal bytes (none for an empty range).
        mutating func literal(_ p: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
            guard !range.isEmpty else { return true }
            guard varint(range.count << 1), range.count <= buffer.count - count else { return false }
            (buffer.baseAddress! + count).copyMemory(from: p.baseAddress! + range.lowerBound, byteCount: range.count)
            count += range.count
            return true
        }
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

/// The payloads of claimed rows, decoded against their references. A reference's bytes are read
/// from the state file once per run: its id names the same bytes for good (AUTOINCREMENT, never
/// reused in the file, https://sqlite.org/autoinc.html), and a run has at most one reference per
/// recorded batch, usually one.
final class PayloadReferences: Sendable {
    private let loaded = Mutex<[Int64: [UInt8]]>([:])

    /// The payload of a staged row whose `payload` column holds `stored` and whose
    /// `payload_reference` is `reference`.
    func payload(_ stored: UnsafeRawBufferPointer, reference: Int64?, seq: Int64, db: Database, path: String) throws -> [UInt8] {
        guard let reference else { return Array(stored) }
        var bytes = loaded.withLock { $0[reference] }
        if bytes == nil {
            bytes = try Data.fetchOne(db.cachedStatement(sql: "SELECT bytes FROM payload_reference WHERE id = ?"), arguments: [reference])
                .map { [UInt8]($0) }
            if let bytes { loaded.withLock { $0[reference] = bytes } }
        }
        guard let bytes, let payload = PayloadReference.decode(stored, reference: bytes) else {
            throw StateError(path: path, message: "the staged payload of recipient \(seq) cannot be read back (payload reference \(reference)): "
                                 + "the state file was changed outside herald")
        }
        return payload
    }
}
