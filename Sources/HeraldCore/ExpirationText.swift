/// `apns-expiration` as job files and audience fields write it. One grammar for both, so a
/// value means the same in `push.expiration` and in a recipient's `{{expires_at}}` field:
///
/// - `0`: attempt once, do not store (Apple: "APNs attempts to deliver the notification only once",
///   https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
/// - a duration, `3600`, `90s`, `15m`, `24h`, `7d`: seconds from the moment of sending.
/// - a UNIX time, a whole number ≥ 1,000,000,000 (Sept 2001): that instant. No one means
///   "store for 31 years" (Apple keeps a notification 30 days at most), so the two cannot be confused.
/// - a UTC time, `2026-12-01T00:00:00Z` (RFC 3339; an offset such as `+01:00` is allowed).
///
/// Foundation-free, because it runs per recipient when the expiration is templated.
public enum ExpirationText {
    /// Bare numbers from here up are UNIX times, below it seconds from send.
    public static let unixTimeThreshold = 1_000_000_000

    /// What the grammar accepts, for error messages ("must be …").
    public static let expected = "0, a duration (3600, 1h, 7d), a UNIX time or a UTC time like 2026-12-01T00:00:00Z"

    public static func parse(_ text: String) -> ExpirationSpec? {
        let t = text.trimmingSpaces
        if t == "0" { return .immediate }
        if !t.isEmpty, t.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(t) {
            return n >= unixTimeThreshold ? .absolute(n) : .relative(n)
        }
        if let seconds = DurationText.seconds(t) { return .relative(seconds) }
        if let time = unixTime(rfc3339: t) { return time >= 0 ? .absolute(time) : nil }
        return nil
    }

    /// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM)` → UNIX seconds (fraction dropped).
    public static func unixTime(rfc3339 text: String) -> Int? {
        let b = Array(text.utf8)
        var i = 0
        func digits(_ n: Int) -> Int? {
            guard i + n <= b.count else { return nil }
            var v = 0
            for k in i..<(i + n) {
                guard b[k] >= 0x30, b[k] <= 0x39 else { return nil }
                v = v * 10 + Int(b[k] - 0x30)
            }
            i += n
            return v
        }
        func expect(_ c: UInt8...) -> Bool {
            guard i < b.count, c.contains(b[i]) else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(UInt8(ascii: "-")), let month = digits(2), expect(UInt8(ascii: "-")),
              let day = digits(2), expect(UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")),
              let hour = digits(2), expect(UInt8(ascii: ":")), let minute = digits(2), expect(UInt8(ascii: ":")),
              let second = digits(2) else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
              hour <= 23, minute <= 59, second <= 60 else { return nil }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            let start = i
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 { i += 1 }
            guard i > start else { return nil }
        }
        var offset = 0
        if expect(UInt8(ascii: "Z"), UInt8(ascii: "z")) {
            offset = 0
        } else if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            let sign = b[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let oh = digits(2) else { return nil }
            _ = expect(UInt8(ascii: ":"))
            guard let om = digits(2), oh <= 23, om <= 59 else { return nil }
            offset = sign * (oh * 3600 + om * 60)
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offset
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

extension ExpirationSpec {
    /// The `apns-expiration` value for a push sent at `now` (UNIX seconds); nil leaves the
    /// header out, so Apple's storage policy (up to 30 days) applies.
    public func headerValue(sentAt now: Int) -> Int? {
        switch self {
        case .unset: return nil
        case .immediate: return 0
        case .relative(let seconds): return now + seconds
        case .absolute(let time): return time
        }
    }
}
