/// Durations as job files write them: `90s`, `15m`, `24h`, `7d` (a bare number is seconds).
public enum DurationText {
    /// Seconds as job files write them, in the largest whole unit, a day as `24h`: 86400 → `24h`,
    /// 604800 → `7d`, 5400 → `90m`.
    public static func text(_ seconds: Int) -> String {
        if seconds % 86_400 == 0 && seconds >= 2 * 86_400 { return "\(seconds / 86_400)d" }
        if seconds % 3600 == 0 { return "\(seconds / 3600)h" }
        if seconds % 60 == 0 { return "\(seconds / 60)m" }
        return "\(seconds)s"
    }

    public static func seconds(_ text: String) -> Int? {
        let t = text.trimmingSpaces
        guard let last = t.last else { return nil }
        let unit: Int
        var digits = Substring(t)
        switch last {
        case "s": unit = 1; digits = digits.dropLast()
        case "m": unit = 60; digits = digits.dropLast()
        case "h": unit = 3600; digits = digits.dropLast()
        case "d": unit = 86_400; digits = digits.dropLast()
        default: unit = 1
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(digits) else { return nil }
        let (product, overflow) = n.multipliedReportingOverflow(by: unit)
        return overflow ? nil : product
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
