import Foundation
import Synchronization

/// A wall-clock time of day as job files write it: `09:00`, `21:30`; `24:00` only as the end of a span.
public struct LocalClockTime: Sendable, Equatable, Comparable, CustomStringConvertible {
    /// Minutes after local midnight, 0...1440.
    public let minutes: Int

    public init?(_ text: String) {
        let parts = text.trimmingSpaces.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2,
              let h = Int(parts[0]), let m = Int(parts[1]), (0...24).contains(h), (0...59).contains(m), h < 24 || m == 0 else { return nil }
        minutes = h * 60 + m
    }

    public init(minutes: Int) { self.minutes = minutes }

    public static func < (a: Self, b: Self) -> Bool { a.minutes < b.minutes }
    public var description: String { String(format: "%02d:%02d", minutes / 60, minutes % 60) }
}

/// A span of local clock time, `from` included, `to` excluded. A `to` at or before `from` ends on
/// the next day (quiet hours `21:00`–`08:00`).
public struct LocalSpan: Sendable, Equatable, CustomStringConvertible {
    public var from: LocalClockTime
    public var to: LocalClockTime
    public init(from: LocalClockTime, to: LocalClockTime) { self.from = from; self.to = to }

    public var crossesMidnight: Bool { to <= from }
    /// Its length in minutes, on a day without a clock change.
    public var minutes: Int { crossesMidnight ? 1440 - from.minutes + to.minutes : to.minutes - from.minutes }
    public var description: String { "\(from)–\(to)" }
}

/// A calendar date as job files write it: `2026-12-01`.
public struct LocalDate: Sendable, Equatable, CustomStringConvertible {
    public let year: Int, month: Int, day: Int

    public init?(_ text: String) {
        let parts = text.trimmingSpaces.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]), (1...12).contains(m), d >= 1 else { return nil }
        let length = [31, (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]
        guard d <= length else { return nil }
        year = y; month = m; day = d
    }

    /// Days since 1970-01-01 (Howard Hinnant's days_from_civil, http://howardhinnant.github.io/date_algorithms.html).
    public var dayNumber: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    public var description: String { String(format: "%04d-%02d-%02d", year, month, day) }
}

/// Time zones as an audience or a job names them: an IANA name from the system's tz database
/// (`Europe/Paris`, `America/New_York`, `UTC`) or a fixed offset from UTC (`+05:30`, `-0800`, `+05`, `Z`).
public enum TimeZoneText {
    /// Zones already looked up, by text, for the whole process: the audience reader, the send
    /// gate and the reports each meet the same few hundred zones, and creating a `TimeZone` reads
    /// and parses its tz database file. Bounded, so an audience of made-up zone names cannot grow it.
    private static let known = Mutex<[String: TimeZone?]>([:])
    static let knownLimit = 4_096

    public static func zone(_ text: String) -> TimeZone? {
        if let hit = known.withLock({ $0[text] }) { return hit }
        let zone = parse(text)
        known.withLock { if $0.count < knownLimit { $0[text] = zone } }
        return zone
    }

    static func parse(_ text: String) -> TimeZone? {
        let t = text.trimmingSpaces
        if t == "Z" || t == "z" { return TimeZone(secondsFromGMT: 0) }
        if let first = t.first, first == "+" || first == "-" {
            let digits = t.dropFirst().filter { $0 != ":" }
            guard digits.allSatisfy({ $0.isASCII && $0.isNumber }), digits.count == 2 || digits.count == 4,
                  t.dropFirst().count == digits.count || (t.dropFirst().count == 5 && t.dropFirst().dropFirst(2).first == ":"),
                  let h = Int(digits.prefix(2)), let m = Int(digits.dropFirst(2).isEmpty ? "0" : String(digits.dropFirst(2))),
                  h <= 14, m < 60 else { return nil }
            let seconds = (h * 3600 + m * 60) * (first == "-" ? -1 : 1)
            return TimeZone(secondsFromGMT: seconds)
        }
        guard !refusedNames.contains(t) else { return nil }
        // Foundation also takes abbreviations ("PST", "IST", "BST") that mean different zones to
        // different people and ignore summer time: a name without a `/` counts only when it is a
        // file of the tz database itself (`Japan`, `GB`, `EST5EDT`, `Zulu`: the database's links).
        guard t.contains("/") || isDatabaseFile(t) else { return nil }
        return TimeZone(identifier: t)
    }

    /// Names the tz database has that herald refuses: `EST`, `MST` and `HST` are fixed offsets
    /// that ignore the summer time of the places people mean by them (`EST` for New York in July
    /// is an hour off; write America/New_York), and the rest are files that name no place.
    static let refusedNames: Set<String> = ["EST", "MST", "HST", "Factory", "localtime", "posixrules"]

    /// Whether `name` is a zone file at the top of the system's tz database (`TZDIR`, as tzcode
    /// reads it, else /usr/share/zoneinfo).
    static func isDatabaseFile(_ name: String) -> Bool {
        guard !name.isEmpty, !name.hasPrefix("."), name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return false }
        let dir = ProcessInfo.processInfo.environment["TZDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/share/zoneinfo"
        var isDir: ObjCBool = false
        return FileManager.default.fileExists(atPath: dir + "/" + name, isDirectory: &isDir) && !isDir.boolValue
    }
}
