/// Reads `audience.registered_at_field`: when the device (re)registered its token, as milliseconds
/// since the epoch. The suppression list sends a 410'd token again only when this is newer than
/// APNs' 410 timestamp, so a value must be read exactly or refused, never guessed.
///
/// Accepted: ISO 8601 (`2026-05-01`, `2026-05-01T10:00:00Z`, fractional seconds, `+02:00`/`+0200`
/// offsets, a space instead of `T`; no offset means UTC, as database exports usually are), and
/// epoch numbers: seconds below 10^11 (year 5138), milliseconds from 10^11 (March 1973) on.
/// Works on the UTF-8 bytes: it runs once per audience row.
public enum RegistrationTime {
    /// nil for an absent or empty value (nothing known: the suppression list applies); a message
    /// for the operator when the value is not a time.
    public static func milliseconds(_ value: FieldValue) -> Result<Int64?, Failure> {
        switch value {
        case .null: return .success(nil)
        case .string(let s), .number(let s):
            let bytes = Array(s.utf8).trimmingSpaces
            if bytes.isEmpty { return .success(nil) }
            if let n = epoch(bytes) { return .success(n) }
            if let n = iso8601(bytes) { return .success(n) }
            return .failure(Failure(value: s))
        case .bool(let b): return .failure(Failure(value: b ? "true" : "false"))
        case .json(let j): return .failure(Failure(value: j))
        }
    }

    /// An ISO 8601 time as ms since the epoch (reports read back their own timestamps with it).
    public static func iso8601Milliseconds(_ s: String) -> Int64? { iso8601(Array(s.utf8)) }

    /// ms since the epoch as ISO 8601 UTC with milliseconds (`2026-11-22T00:22:17.123Z`).
    public static func iso8601(milliseconds ms: Int64) -> String {
        let days = ms >= 0 ? ms / 86_400_000 : (ms - 86_399_999) / 86_400_000
        let rest = ms - days * 86_400_000
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        // Written digit by digit into 24 bytes: reports format one or two times per recipient, and
        // String interpolation with padding costs several allocations each.
        guard (0...9999).contains(y) else { return String(format: "%lld-%02lld-%02lldT%02lld:%02lld:%02lld.%03lldZ", y, m, d, rest / 3_600_000,
                                                          rest / 60_000 % 60, rest / 1000 % 60, rest % 1000) }
        return String(unsafeUninitializedCapacity: 24) { out in
            func put(_ value: Int64, _ at: Int, _ width: Int) {
                var v = value
                for i in stride(from: at + width - 1, through: at, by: -1) { out[i] = UInt8(ascii: "0") + UInt8(v % 10); v /= 10 }
            }
            put(y, 0, 4); out[4] = UInt8(ascii: "-"); put(m, 5, 2); out[7] = UInt8(ascii: "-"); put(d, 8, 2); out[10] = UInt8(ascii: "T")
            put(rest / 3_600_000, 11, 2); out[13] = UInt8(ascii: ":"); put(rest / 60_000 % 60, 14, 2); out[16] = UInt8(ascii: ":")
            put(rest / 1000 % 60, 17, 2); out[19] = UInt8(ascii: "."); put(rest % 1000, 20, 3); out[23] = UInt8(ascii: "Z")
            return 24
        }
    }

    public struct Failure: Error, Equatable {
        public let value: String
        public var message: String {
            let shown = value.count > 40 ? String(value.prefix(40)) + "…" : value
            return "\"\(shown)\" is not a time: expected ISO 8601 (2026-05-01T10:00:00Z) or epoch seconds/milliseconds"
        }
    }

    /// Digits, optionally with a fraction (`1714557600.5`).
    static func epoch(_ b: [UInt8]) -> Int64? {
        var whole: Int64 = 0, i = 0
        while i < b.count, let d = digit(b[i]) {
            guard whole < 1_000_000_000_000_000 else { return nil }
            whole = whole * 10 + d; i += 1
        }
        guard i > 0 else { return nil }
        var fraction = 0.0, scale = 0.1
        if i < b.count {
            guard b[i] == UInt8(ascii: "."), i + 1 < b.count else { return nil }
            i += 1
            while i < b.count, let d = digit(b[i]) { fraction += Double(d) * scale; scale /= 10; i += 1 }
            guard i == b.count else { return nil }
        }
        if whole >= 100_000_000_000 { return whole }
        return whole * 1000 + Int64(fraction * 1000)
    }

    public static func iso8601(_ b: [UInt8]) -> Int64? {
        var i = 0
        func number(_ width: Int) -> Int64? {
            guard i + width <= b.count else { return nil }
            var n: Int64 = 0
            for k in i..<(i + width) { guard let d = digit(b[k]) else { return nil }; n = n * 10 + d }
            i += width
            return n
        }
        func expect(_ c: Character) -> Bool {
            guard i < b.count, b[i] == UInt8(ascii: c.unicodeScalars.first!) else { return false }
            i += 1; return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
              (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day) else { return nil }
        var ms = days(year: year, month: month, day: day) * 86_400_000
        if i == b.count { return ms }
        guard b[i] == UInt8(ascii: "T") || b[i] == UInt8(ascii: "t") || b[i] == UInt8(ascii: " ") else { return nil }
        i += 1
        guard let hour = number(2), expect(":"), let minute = number(2), hour < 24, minute < 60 else { return nil }
        var second: Int64 = 0, millis: Int64 = 0
        if expect(":") {
            guard let s = number(2), s < 61 else { return nil }
            second = min(s, 59)
            if expect(".") || expect(",") {
                var scale: Int64 = 100, any = false
                while i < b.count, let d = digit(b[i]) { millis += d * scale; scale /= 10; i += 1; any = true }
                guard any else { return nil }
            }
        }
        ms += ((hour * 60 + minute) * 60 + second) * 1000 + millis
        if i == b.count || expect("Z") || expect("z") { return i == b.count ? ms : nil }
        guard i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") else { return nil }
        let sign: Int64 = b[i] == UInt8(ascii: "+") ? 1 : -1
        i += 1
        guard let oh = number(2) else { return nil }
        _ = expect(":")
        guard let om = number(2), oh < 24, om < 60, i == b.count else { return nil }
        return ms - sign * (oh * 60 + om) * 60_000
    }

    static func digit(_ c: UInt8) -> Int64? { c >= 0x30 && c <= 0x39 ? Int64(c - 0x30) : nil }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 (Howard Hinnant's days_from_civil).
    static func days(year y0: Int64, month m: Int64, day d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

extension Array where Element == UInt8 {
    fileprivate var trimmingSpaces: [UInt8] {
        var s = startIndex, e = endIndex
        while s < e, self[s] == 0x20 || self[s] == 0x09 { s += 1 }
        while e > s, self[e - 1] == 0x20 || self[e - 1] == 0x09 { e -= 1 }
        return Array(self[s..<e])
    }
}
