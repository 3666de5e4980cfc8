import Foundation

/// Times as herald writes and reads them: ISO 8601 / RFC 3339 in UTC (`2026-12-01T08:00:00Z`,
/// `2026-11-22T02:48:30.423Z`). Written by hand with gmtime_r and timegm: Foundation's
/// ISO8601DateFormatter sets up an ICU calendar, which loads ICU's data, resident from then on, into
/// every run that formats or reads one time (CHANGELOG.md has the figure), and a new formatter per
/// call repeats that setup.
public enum UTCText {
    /// `2026-12-01T08:00:00Z`: messages, status lines, the suppression list.
    public static func seconds(_ date: Date) -> String {
        format(date, milliseconds: false)
    }

    /// `2026-11-22T02:48:30.423Z`: the state file's timestamps.
    public static func milliseconds(_ date: Date) -> String {
        format(date, milliseconds: true)
    }

    private static func format(_ date: Date, milliseconds: Bool) -> String {
        let ms = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var seconds = time_t(ms >= 0 ? ms / 1000 : (ms - 999) / 1000)
        let milli = Int(ms - Int64(seconds) * 1000)
        var t = tm()
        gmtime_r(&seconds, &t)
        var out = [UInt8](repeating: 0, count: milliseconds ? 24 : 20)
        func put(_ value: Int, _ at: Int, _ width: Int) {
            var v = value
            for i in stride(from: at + width - 1, through: at, by: -1) { out[i] = UInt8(ascii: "0") + UInt8(v % 10); v /= 10 }
        }
        put(Int(t.tm_year) + 1900, 0, 4); out[4] = UInt8(ascii: "-")
        put(Int(t.tm_mon) + 1, 5, 2); out[7] = UInt8(ascii: "-")
        put(Int(t.tm_mday), 8, 2); out[10] = UInt8(ascii: "T")
        put(Int(t.tm_hour), 11, 2); out[13] = UInt8(ascii: ":")
        put(Int(t.tm_min), 14, 2); out[16] = UInt8(ascii: ":")
        put(Int(t.tm_sec), 17, 2)
        if milliseconds {
            out[19] = UInt8(ascii: ".")
            put(milli, 20, 3)
        }
        out[out.count - 1] = UInt8(ascii: "Z")
        return String(decoding: out, as: UTF8.self)
    }

    /// Reads an RFC 3339 date-time (https://www.rfc-editor.org/rfc/rfc3339#section-5.6):
    /// `YYYY-MM-DDTHH:MM:SS`, optional fraction, then `Z` or `±HH:MM`. Nil for anything else.
    public static func parse(_ text: String) -> Date? {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
        func number(_ at: Int, _ width: Int) -> Int? {
            guard at + width <= b.count else { return nil }
            var v = 0
            for i in at..<(at + width) {
                guard b[i] >= 48 && b[i] <= 57 else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        func at(_ i: Int, _ c: Character) -> Bool { i < b.count && b[i] == c.asciiValue! }
        guard let year = number(0, 4), at(4, "-"), let month = number(5, 2), at(7, "-"), let day = number(8, 2),
              at(10, "T") || at(10, "t"), let hour = number(11, 2), at(13, ":"), let minute = number(14, 2), at(16, ":"),
              let second = number(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var i = 19
        var fraction = 0.0
        if at(i, ".") {
            i += 1
            let start = i
            while i < b.count, b[i] >= 48 && b[i] <= 57 { i += 1 }
            guard i > start, let f = Double("0." + String(decoding: b[start..<i], as: UTF8.self)) else { return nil }
            fraction = f
        }
        var offset = 0
        if at(i, "Z") || at(i, "z") {
            i += 1
        } else if at(i, "+") || at(i, "-") {
            guard let oh = number(i + 1, 2), at(i + 3, ":"), let om = number(i + 4, 2), oh < 24, om < 60 else { return nil }
            offset = (oh * 3600 + om * 60) * (at(i, "-") ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        var t = tm()
        t.tm_year = Int32(year - 1900); t.tm_mon = Int32(month - 1); t.tm_mday = Int32(day)
        t.tm_hour = Int32(hour); t.tm_min = Int32(minute); t.tm_sec = Int32(second)
        let utc = timegm(&t)
        // timegm normalises an impossible day (February 30th) into the next month: refuse it.
        guard t.tm_mday == Int32(day), t.tm_mon == Int32(month - 1) else { return nil }
        return Date(timeIntervalSince1970: Double(utc - offset) + fraction)
    }
}
