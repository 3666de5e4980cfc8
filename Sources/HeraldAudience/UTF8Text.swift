/// Building field Strings from raw bytes, refusing invalid UTF-8 instead of repairing it.
///
/// `String(decoding:)` would silently turn a Latin-1 `é` into U+FFFD and the customer would get
/// "Ren� "; an audience row with bad bytes goes to invalid.csv instead.
enum UTF8Text {
    /// The bytes as a String, or nil if they are not valid UTF-8.
    ///
    /// Not `String(validating:as:)`: it is generic over the encoding and runs unspecialized,
    /// with a metadata lookup per call, once per field read. Most fields are ASCII, which an
    /// 8-bytes-at-a-time check settles; the rest get the full check below. `String(decoding:)`
    /// then copies without repairing anything, since the bytes are known to be valid.
    @inline(__always)
    static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        if !isASCII(bytes) && firstInvalidOffset(bytes) != nil { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// True when the bytes are valid UTF-8 (ASCII settled 8 bytes at a time).
    @inline(__always)
    static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        isASCII(bytes) || firstInvalidOffset(bytes) == nil
    }

    @inline(__always)
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        let n = bytes.count
        var i = 0
        var high: UInt64 = 0
        while i + 8 <= n {
            high |= raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            i += 8
        }
        var tail: UInt8 = 0
        while i < n { tail |= base[i]; i += 1 }
        return high & 0x8080_8080_8080_8080 == 0 && tail & 0x80 == 0
    }

    /// Offset of the first byte that starts an invalid sequence, or nil if all is valid.
    /// Also tells the operator where the bad byte is.
    static func firstInvalidOffset(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var i = 0
        let n = bytes.count
        while i < n {
            let b0 = bytes[i]
            if b0 < 0x80 { i += 1; continue }
            let length: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xBF   // allowed range of the second byte
            switch b0 {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F   // no UTF-16 surrogates
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F   // nothing above U+10FFFF
            default: return i
            }
            guard i + length <= n, (low...high).contains(bytes[i + 1]) else { return i }
            for k in 2..<length where bytes[i + k] & 0xC0 != 0x80 { return i }
            i += length
        }
        return nil
    }

    /// "invalid UTF-8 at byte 4 of the field (0xe9)": where, for the operator fixing the export.
    static func problem(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        guard let offset = firstInvalidOffset(bytes) else { return "invalid UTF-8" }
        let hex = String(bytes[offset], radix: 16)
        return "invalid UTF-8 at byte \(offset + 1) of the value (0x\(hex.count == 1 ? "0" + hex : hex))"
    }
}
