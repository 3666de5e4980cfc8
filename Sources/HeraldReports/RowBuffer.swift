import HeraldCore

/// A report file's write buffer. A row's writer first makes room for what a field can take at
/// most (`reserve`), then copies bytes in with no check per byte.
///
/// Why not `[UInt8]`: every `append` on an array checks uniqueness and capacity, and with one
/// append per key, quote and comma that bookkeeping would be most of the cost of a deliveries row.
struct RowBuffer: ~Copyable {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    deinit { base.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    mutating func removeAll() { count = 0 }

    /// Makes room for `n` more bytes: the puts that follow may write that many unchecked.
    mutating func reserve(_ n: Int) {
        guard count + n > capacity else { return }
        let grown = max(capacity * 2, count + n)
        let new = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        new.update(from: base, count: count)
        base.deallocate()
        base = new
        capacity = grown
    }

    mutating func put(_ b: UInt8) {
        assert(count < capacity, "RowBuffer: put without reserve")
        base[count] = b
        count += 1
    }

    mutating func put(_ bytes: UnsafeRawBufferPointer) {
        assert(count + bytes.count <= capacity, "RowBuffer: put without reserve")
        if let from = bytes.baseAddress { (base + count).update(from: from.assumingMemoryBound(to: UInt8.self), count: bytes.count) }
        count += bytes.count
    }

    mutating func put(_ s: StaticString) {
        put(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// Reserves and appends: for header lines and other text written once per file.
    mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { u in
            reserve(u.count)
            put(UnsafeRawBufferPointer(u))
        }
    }

    /// Overwrites the last byte (the comma after a row's last field).
    mutating func replaceLast(with b: UInt8) { base[count - 1] = b }

    /// `n` in decimal; takes at most `DecimalDigits.maxCount` bytes.
    mutating func putDecimal(_ n: Int) {
        assert(count + DecimalDigits.maxCount <= capacity, "RowBuffer: put without reserve")
        count += DecimalDigits.write(n, to: base + count)
    }

    /// `bytes` escaped as the inside of a JSON string, as `JSONEscaping` does it (quote, backslash
    /// and control characters only); takes at most six times their count.
    mutating func putJSONEscaped(_ bytes: UnsafeRawBufferPointer) {
        var start = 0
        while true {
            let i = ByteScan.firstJSONSpecial(bytes, from: start)
            put(UnsafeRawBufferPointer(rebasing: bytes[start..<i]))
            guard i < bytes.count else { return }
            start = i + 1
            let escape = JSONEscaping.escape(of: bytes[i])
            escape.withUnsafeBytes { put($0) }
        }
    }
}

/// Finds the bytes a report field must escape or quote eight at a time: nearly every field
/// (tokens, ids, times) has none, and a test per byte would be most of the cost of writing them.
/// Bit tricks from "Bit Twiddling Hacks" (haszero, hasless): each says whether some byte of the
/// word matches, exactly, and the byte loop after it finds which.
enum ByteScan {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    private static func hasByte(_ w: UInt64, _ b: UInt8) -> Bool {
        let x = w ^ (ones &* UInt64(b))
        return (x &- ones) & ~x & highs != 0
    }

    private static func hasBelow(_ w: UInt64, _ n: UInt8) -> Bool { (w &- ones &* UInt64(n)) & ~w & highs != 0 }

    /// The index of the first quote, backslash or control character at or after `from`; the
    /// count when there is none.
    static func firstJSONSpecial(_ bytes: UnsafeRawBufferPointer, from: Int) -> Int {
        var i = from
        while i + 8 <= bytes.count {
            let w = bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            if hasBelow(w, 0x20) || hasByte(w, UInt8(ascii: "\"")) || hasByte(w, UInt8(ascii: "\\")) { break }
            i += 8
        }
        while i < bytes.count {
            if JSONEscaping.needsEscape(bytes[i]) { return i }
            i += 1
        }
        return i
    }

    /// Whether a CSV field must be quoted (RFC 4180: a comma, quote, CR or LF in it).
    static func needsCSVQuotes(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i + 8 <= bytes.count {
            let w = bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            if hasByte(w, 0x2C) || hasByte(w, 0x22) || hasByte(w, 0x0A) || hasByte(w, 0x0D) { return true }
            i += 8
        }
        while i < bytes.count {
            let b = bytes[i]
            if b == 0x2C || b == 0x22 || b == 0x0A || b == 0x0D { return true }
            i += 1
        }
        return false
    }
}
