import Foundation

/// Job section `schedule`: when, in each recipient's own time zone, a push may start.
public struct ScheduleSpec: Sendable, Equatable {
    /// `schedule.default_timezone`: the zone of rows without a time zone value.
    public var defaultTimezone = "UTC"
    /// `schedule.local_time`: pushes start only while the recipient's clock is in this span.
    public var localTime: LocalSpan?
    /// `schedule.date`: the local date of that span, in every zone; nil: each recipient's first span after the run starts.
    public var date: LocalDate?
    /// `schedule.quiet_hours`: no push (retries included) starts while the recipient's clock is in this span.
    public var quietHours: LocalSpan?
    /// `schedule.wait`: true, `herald run` stays up and sends each window as it opens; false, it exits 4 until then.
    public var wait = true
    public init() {}
}

/// When a recipient in a given time zone may first be sent (its due time), from the job's
/// `schedule`: the earliest instant at or after `now` inside `local_time` (on `date`, if given)
/// and outside `quiet_hours`. Local clock times go through the zone's rules as the system's tz
/// database has them: a local time that does not exist (the hour skipped when clocks go forward)
/// means the first minute after the gap; a local time that happens twice (the hour repeated when
/// clocks go back) means its first occurrence.
public struct DuePlanner: Sendable {
    public let spec: ScheduleSpec
    /// A daily campaign's UTC day (`ScheduleSpec.dailyPeriod`): each zone's span is the one that
    /// starts within it, not the first after each instant. nil: no such restriction.
    public let period: Date?

    public init(spec: ScheduleSpec, period: Date? = nil) { self.spec = spec; self.period = period }

    /// The local day whose `local_time` span this planner targets in `zone`: `date`'s, or, for a
    /// daily campaign, the day of the span that starts within the campaign's UTC day; nil: any.
    func targetDay(in zone: TimeZone) -> Int? {
        if let date = spec.date { return date.dayNumber }
        guard let period, let window = spec.localTime else { return nil }
        let start = period.timeIntervalSince1970
        let first = Self.localDay(of: start, in: zone)
        for d in (first - 1)...(first + 2) where Self.instants(of: window, onDay: d, in: zone).0 >= start { return d }
        return nil
    }

    public enum Due: Sendable, Equatable {
        case at(Date)
        /// No instant satisfies the schedule: `date`'s window has passed in this zone, or the
        /// quiet hours cover what is left of it.
        case never
    }

    public func due(in zone: TimeZone, after now: Date) -> Due {
        var t = now.timeIntervalSince1970
        let day = targetDay(in: zone)
        // Each turn moves t forward to a window's start or a quiet span's end; a few turns settle
        // any real schedule. One that keeps moving (a window inside the quiet hours) never opens.
        for _ in 0..<12 {
            if let window = spec.localTime {
                guard let (start, _) = Self.span(window, endingAfter: t, in: zone, onDay: day) else { return .never }
                t = max(t, start)
            }
            if let quiet = spec.quietHours, let end = Self.end(of: quiet, containing: t, in: zone) {
                t = end
                continue
            }
            return .at(Date(timeIntervalSince1970: t))
        }
        return .never
    }

    /// When `t` is a time a push may start (inside `local_time`, outside `quiet_hours`): the end of
    /// that allowed stretch, the earlier of the window's end and the next quiet hours' start
    /// (`.distantFuture` when neither comes). nil when `t` itself is not allowed.
    public func openUntil(in zone: TimeZone, at t: Date) -> Date? {
        let now = t.timeIntervalSince1970
        // `due` works in UNIX seconds: a Date made from the clock (stored from 2001) may come back
        // from that round trip an ulp later, which is still `t`.
        guard case .at(let d) = due(in: zone, after: t), d.timeIntervalSince1970 - now < 0.001 else { return nil }
        var end = Double.infinity
        if let window = spec.localTime, let (_, close) = Self.span(window, endingAfter: now, in: zone, onDay: targetDay(in: zone)) {
            end = min(end, close)
        }
        if let quiet = spec.quietHours, let (start, _) = Self.span(quiet, endingAfter: now, in: zone, onDay: nil) {
            end = min(end, start)
        }
        return end.isFinite ? Date(timeIntervalSince1970: end) : .distantFuture
    }

    /// The first occurrence of `span` (on local day `day` only, if given) that ends after `t`:
    /// its start and end as UNIX seconds.
    static func span(_ span: LocalSpan, endingAfter t: Double, in zone: TimeZone, onDay day: Int?) -> (Double, Double)? {
        let today = localDay(of: t, in: zone)
        for d in day.map({ [$0] }) ?? Array((today - 1)...(today + 2)) {
            let (start, end) = instants(of: span, onDay: d, in: zone)
            if end > t { return (start, end) }
        }
        return nil
    }

    /// The end of the occurrence of `span` that contains `t`, if one does.
    static func end(of span: LocalSpan, containing t: Double, in zone: TimeZone) -> Double? {
        let today = localDay(of: t, in: zone)
        for d in (today - 1)...today {
            let (start, end) = instants(of: span, onDay: d, in: zone)
            if start <= t && t < end { return end }
        }
        return nil
    }

    static func instants(of span: LocalSpan, onDay d: Int, in zone: TimeZone) -> (Double, Double) {
        let base = Double(d) * 86_400
        let start = instant(ofLocal: base + Double(span.from.minutes * 60), in: zone)
        let end = instant(ofLocal: base + Double((span.to.minutes + (span.crossesMidnight ? 1440 : 0)) * 60), in: zone)
        return (start, end)
    }

    /// The local day number (days since 1970-01-01 on the zone's calendar) at UNIX time `t`.
    public static func localDay(of t: Double, in zone: TimeZone) -> Int {
        Int(((t + Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: t)))) / 86_400).rounded(.down))
    }

    /// The UNIX time at which the zone's clocks read `local` (seconds since 1970-01-01 00:00 on
    /// the local clock). Offsets are taken a day either side: a zone changes its offset at most
    /// once in two days.
    static func instant(ofLocal local: Double, in zone: TimeZone) -> Double {
        func offset(_ u: Double) -> Double { Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: u))) }
        let before = offset(local - 86_400), after = offset(local + 86_400)
        // The earliest reading: a repeated hour's first occurrence.
        let readings = [local - before, local - after].filter { offset($0) == local - $0 }
        if let first = readings.min() { return first }
        // A skipped reading (clocks went forward from `before` to `after`): the change itself, the
        // first instant whose clock reads later than `local`. Between `local - after` (still on the
        // old offset) and `local - before` (already on the new one), to the second.
        var low = local - after, high = local - before
        while high - low > 1 {
            let mid = ((low + high) / 2).rounded(.down)
            if offset(mid) == before { low = mid } else { high = mid }
        }
        return high
    }
}

extension ScheduleSpec {
    /// A campaign named with `{date}` is sent again every day: for it, a `local_time` without
    /// `date` means each zone's span that starts within the campaign's UTC day (the day `{date}`
    /// names), so consecutive days' campaigns split every zone's spans between them: none is
    /// sent twice on one local day, and none is left to no campaign (a zone's span that started
    /// before the run did is `window_missed`, not taken from the next day's campaign).
    /// The midnight (UTC) that starts that day, for a run started at `runStarted`; nil when this
    /// does not apply (no `{date}`, a `date`, or no `local_time`).
    public func dailyPeriod(campaign: CampaignName, runStarted: Date) -> Date? {
        guard campaign.template.contains("{date}"), date == nil, localTime != nil else { return nil }
        return Date(timeIntervalSince1970: (runStarted.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
    }

    /// The zones herald accepts reach back to UTC−14:00 (a fixed offset; the tz database's latest
    /// zone is UTC−12:00): once `date`'s window has closed there, it has closed everywhere.
    static let latestOffsetSeconds = 14 * 3600

    /// When `date`'s `local_time` window closes in the last zone it could be open in; nil without a date.
    public var dateClosesEverywhere: Date? {
        guard let date, let window = localTime else { return nil }
        let end = window.to.minutes + (window.crossesMidnight ? 1440 : 0)
        return Date(timeIntervalSince1970: Double(date.dayNumber) * 86_400 + Double(end * 60 + Self.latestOffsetSeconds))
    }

    /// Why a campaign started at `now` would send nothing: `date`'s window has already closed in
    /// every zone, so every recipient would end `window_missed` (almost always a typo in the date).
    public func pastDateProblem(at now: Date) -> String? {
        guard let date, let window = localTime, let closes = dateClosesEverywhere, now >= closes else { return nil }
        return "schedule.date \(date) is in the past: its local_time window (\(window)) closed in every time zone by "
            + "\(UTCText.seconds(closes)), so no recipient could be sent; correct the date, or leave it out to send in each "
            + "recipient's next window"
    }
}
