import Foundation
import HeraldCore
import Synchronization

/// Each audience row's time zone and due time (`schedule`), worked out once per zone: every
/// recipient of a zone gets the same due time from the same `now` (the invocation's start), so
/// a million rows over a few hundred zones cost a few hundred calculations, not a million.
final class DueTimes: Sendable {
    let planner: DuePlanner
    let field: String?
    let now: Date
    private let cache = Mutex<[String: DuePlanner.Due?]>([:])

    /// `throttle.deadline`'s absolute time: a recipient due after it is never sent (`window_missed`).
    /// A deadline counted from each run's start moves with every rerun, so it misses nobody for good.
    let missedAfter: Double

    /// `runStarted`: when the run first started (a daily campaign's day, `ScheduleSpec.dailyPeriod`).
    init(job: JobSpec, now: Date, runStarted: Date) {
        let schedule = job.schedule ?? ScheduleSpec()
        planner = DuePlanner(spec: schedule, period: schedule.dailyPeriod(campaign: CampaignName(job.campaign), runStarted: runStarted))
        field = job.audience.timezoneField
        self.now = now
        missedAfter = job.throttle.deadline?.at.map(Double.init) ?? .infinity
    }

    /// The row's zone as written (the default when the row has none) and its due time (UNIX
    /// seconds; infinity when no window opens before `missedAfter`), or the invalid row an unknown zone makes.
    enum Resolved {
        case due(zone: String, dueAt: Double)
        case invalid(InvalidRow)
    }

    func resolve(_ record: AudienceRecord) -> Resolved {
        var zone = planner.spec.defaultTimezone
        if let field, let value = record.fields[field]?.text, !value.isEmpty { zone = value }
        if let known = cache.withLock({ $0[zone] }) {
            guard let due = known else { return .invalid(unknown(zone, record)) }
            return .due(zone: zone, dueAt: seconds(due))
        }
        guard let tz = TimeZoneText.zone(zone) else {
            cache.withLock { $0[zone] = .some(nil) }
            return .invalid(unknown(zone, record))
        }
        let due = planner.due(in: tz, after: now)
        cache.withLock { $0[zone] = due }
        return .due(zone: zone, dueAt: seconds(due))
    }

    func seconds(_ due: DuePlanner.Due) -> Double {
        switch due {
        case .at(let d): return d.timeIntervalSince1970 > missedAfter ? .infinity : d.timeIntervalSince1970
        case .never: return .infinity
        }
    }

    private func unknown(_ zone: String, _ record: AudienceRecord) -> InvalidRow {
        let shown = zone.count > 40 ? String(zone.prefix(40)) + "…" : zone
        return InvalidRow(location: record.location, reason: .badFieldValue, field: field ?? "",
                          detail: "audience.timezone_field \(field ?? ""): \"\(shown)\" is not a time zone (a name such as Europe/Paris, or an offset such as +05:30)")
    }
}

/// The schedule checked again as each claimed recipient is about to leave. Due times are worked
/// out when rows are recorded, but a run can start after a window has closed (cron reruns a
/// `wait: false` job at 15:00 for a 09:00–11:00 window) or while the quiet hours are on: a
/// recipient's first push starts only inside `local_time` and outside `quiet_hours`, a retry only
/// outside `quiet_hours` (the job's promise: "never start a push inside these local hours
/// (retries included)"). Each zone's allowed stretch is worked out once and reused until it ends,
/// so the check costs a dictionary lookup per push. Used by the send loop's thread only.
final class LocalTimeCheck {
    enum Verdict: Equatable {
        case open
        /// Not now: due again then.
        case hold(until: Date)
        /// A first push whose window cannot open any more (`date` passed, or after the absolute deadline).
        case missed
    }

    private let first: DuePlanner
    private let retry: DuePlanner?
    private let defaultZone: String
    private let missedAfter: Double
    /// Per zone and kind (first push or retry): until when a push may start.
    private var open: [String: Date] = [:]
    private var openForRetry: [String: Date] = [:]

    init?(job: JobSpec, runStarted: Date) {
        guard let schedule = job.schedule else { return nil }
        first = DuePlanner(spec: schedule, period: schedule.dailyPeriod(campaign: CampaignName(job.campaign), runStarted: runStarted))
        var quiet = ScheduleSpec()
        quiet.quietHours = schedule.quietHours
        retry = schedule.quietHours == nil ? nil : DuePlanner(spec: quiet)
        defaultZone = schedule.defaultTimezone
        missedAfter = job.throttle.deadline?.at.map(Double.init) ?? .infinity
    }

    /// A recipient leaving at `leaves`: a retry when it has been attempted before (`attempts` counts
    /// this one), in `zone` (nil: the default zone; a zone no longer known: not held).
    func check(zone: String?, attempts: Int, leaves: Date) -> Verdict {
        let isRetry = attempts > 1
        let name = zone ?? defaultZone
        if let until = (isRetry ? openForRetry : open)[name], leaves < until { return .open }
        guard let planner = isRetry ? retry : first else { return .open }
        // Only once per zone and stretch: TimeZoneText keeps the zones it has looked up.
        guard let tz = TimeZoneText.zone(name) else { return .open }
        if let until = planner.openUntil(in: tz, at: leaves) {
            if isRetry { openForRetry[name] = until } else { open[name] = until }
            return .open
        }
        switch planner.due(in: tz, after: leaves) {
        case .at(let d): return isRetry || d.timeIntervalSince1970 <= missedAfter ? .hold(until: d) : .missed
        case .never: return isRetry ? .open : .missed
        }
    }

    /// After `check` said `.open`: when that recipient's allowed stretch ends (nil: it does not),
    /// the instant its request must not start at or after (`PushJob.notAfter`).
    func openUntil(zone: String?, attempts: Int) -> Date? {
        let until = (attempts > 1 ? openForRetry : open)[zone ?? defaultZone]
        return until == .distantFuture ? nil : until
    }

    /// Whether retries can be held (the schedule has quiet hours).
    var holdsRetries: Bool { retry != nil }

    /// A retry's time, or the end of the quiet hours it falls in.
    func holdRetry(_ time: Date, zone: String?) -> Date {
        if case .hold(let until) = check(zone: zone, attempts: 2, leaves: time) { return until }
        return time
    }
}
