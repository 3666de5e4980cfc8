import Foundation

/// A job's `campaign:` as written, possibly with period placeholders for cron campaigns:
/// `{date}` (YYYY-MM-DD), `{week}` (ISO YYYY-Www) and `{month}` (YYYY-MM), all in UTC.
///
/// The template, not a resolved name, identifies the job: its state file and lock are named after
/// it, so a run that started before midnight is found and resumed by a rerun after midnight
/// instead of a second campaign starting. The resolved name is fixed when a run first starts.
public struct CampaignName: Sendable, Equatable, CustomStringConvertible {
    public static let placeholders = ["{date}", "{week}", "{month}"]

    public let template: String

    public init(_ template: String) { self.template = template }

    public var description: String { template }

    /// True when the name changes with the calendar (a recurring campaign).
    public var isPeriodic: Bool { Self.placeholders.contains { template.contains($0) } }

    /// The campaign's name for a run started at `date`.
    public func resolved(at date: Date) -> String {
        guard isPeriodic else { return template }
        let p = Self.period(of: date)
        return template.replacingOccurrences(of: "{date}", with: p.date)
            .replacingOccurrences(of: "{week}", with: p.week)
            .replacingOccurrences(of: "{month}", with: p.month)
    }

    /// Resolves `{campaign}` and the period placeholders in a path (the reports directory), for
    /// the run named `campaign` that started at `date`.
    public static func resolvePath(_ path: String, campaign: String, startedAt date: Date) -> String {
        let p = period(of: date)
        return path.replacingOccurrences(of: "{campaign}", with: campaign)
            .replacingOccurrences(of: "{date}", with: p.date)
            .replacingOccurrences(of: "{week}", with: p.week)
            .replacingOccurrences(of: "{month}", with: p.month)
    }

    /// Problems with a template, for the job loader: what is left once placeholders are removed
    /// must be a plain file-name-safe word.
    public var invalidCharacter: Character? {
        var rest = template
        for p in Self.placeholders { rest = rest.replacingOccurrences(of: p, with: "") }
        return rest.first { c in
            !(c.isASCII && (c.isLetter || c.isNumber || c == "." || c == "_" || c == "-"))
        }
    }

    static func period(of date: Date) -> (date: String, week: String, month: String) {
        var cal = Calendar(identifier: .iso8601)
        cal.timeZone = TimeZone(identifier: "UTC")!
        let d = cal.dateComponents([.year, .month, .day], from: date)
        let w = cal.dateComponents([.yearForWeekOfYear, .weekOfYear], from: date)
        let y = d.year!, m = d.month!, day = d.day!
        return (String(format: "%04d-%02d-%02d", y, m, day),
                String(format: "%04d-W%02d", w.yearForWeekOfYear!, w.weekOfYear!),
                String(format: "%04d-%02d", y, m))
    }
}
