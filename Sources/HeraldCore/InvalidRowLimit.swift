/// Job key `audience.max_invalid_rows`: how many unusable rows (audience errors and per-recipient
/// render errors together) a campaign tolerates before it stops with exit 5.
///
/// An export with a few bad rows is normal; one where a tenth of the rows are bad is usually a
/// wrong column or a broken export, and sending to the rest would be sending to the wrong audience.
public enum InvalidRowLimit: Sendable, Equatable, CustomStringConvertible {
    /// At most this many invalid rows.
    case count(Int)
    /// At most this share of all rows, in thousandths of a percent (`5%` is 5000), so that the
    /// limit is exact integer arithmetic (`0.29%` of 1000 rows allows 2, never 2.8999… rounded oddly).
    case percentage(thousandths: Int)

    /// 5 % of the rows.
    public static let `default` = InvalidRowLimit.percentage(thousandths: 5_000)

    /// `percent(5)` is 5 %; at most three decimals are kept.
    public static func percent(_ p: Double) -> InvalidRowLimit {
        .percentage(thousandths: Int((p * 1000).rounded()))
    }

    /// Parses what a job writes: a whole number (`1000`) or a percentage (`5%`, `0.5%`).
    /// Nil for anything else, negative values, or more than 100 %.
    public init?(text: String) {
        let t = text.trimmingSpaces
        if t.hasSuffix("%") {
            let number = String(t.dropLast()).trimmingSpaces
            guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                  number.filter({ $0 == "." }).count <= 1, let p = Double(number), p >= 0, p <= 100 else { return nil }
            let thousandths = (p * 1000).rounded()
            guard abs(thousandths - p * 1000) < 1e-6 else { return nil }   // more than three decimals
            self = .percentage(thousandths: Int(thousandths))
        } else {
            guard !t.isEmpty, t.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(t) else { return nil }
            self = .count(n)
        }
    }

    /// The most invalid rows allowed among `rows` rows (rounded down: 5 % of 19 rows is 0).
    public func allowed(rows: Int) -> Int {
        switch self {
        case .count(let n): return n
        case .percentage(let t): return rows * t / 100_000   // t ≤ 100,000: no overflow below 10¹³ rows
        }
    }

    /// True when `invalid` rows out of `rows` is more than the limit allows.
    public func isExceeded(invalid: Int, rows: Int) -> Bool { invalid > allowed(rows: rows) }

    /// Rows read before a percentage is judged on a partial audience (sending while reading):
    /// the first rows alone are too few to say anything about the whole (one bad row among the
    /// first ten is 10 %).
    public static let sampleBeforeJudging = 10_000

    /// The check made while the audience is still being read (`audience.prescan: false`): a count is
    /// final as soon as it is passed; a percentage only counts once `sampleBeforeJudging` rows are
    /// read, and the whole audience is judged again at its end with `isExceeded`.
    public func isExceededSoFar(invalid: Int, rows: Int) -> Bool {
        switch self {
        case .count: return isExceeded(invalid: invalid, rows: rows)
        case .percentage: return rows >= Self.sampleBeforeJudging && isExceeded(invalid: invalid, rows: rows)
        }
    }

    /// As a job writes it: `1000` or `5%` / `0.5%`.
    public var description: String {
        switch self {
        case .count(let n): return String(n)
        case .percentage(let t):
            let whole = t / 1000, fraction = t % 1000
            if fraction == 0 { return "\(whole)%" }
            var decimals = String(fraction)
            while decimals.count < 3 { decimals = "0" + decimals }
            while decimals.hasSuffix("0") { decimals.removeLast() }
            return "\(whole).\(decimals)%"
        }
    }
}
