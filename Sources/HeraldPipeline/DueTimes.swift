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

    init(job: JobSpec, now: Date) {
        planner = DuePlanner(spec: job.schedule ?? ScheduleSpec())
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

/// `schedule.quiet_hours` for retries: a retry whose time falls in its recipient's quiet hours is
/// held until they end. Zones are looked up once each; used by the send loop's thread only.
final class QuietHours {
    private let planner: DuePlanner
    private var zones: [String: TimeZone?] = [:]

    init?(schedule: ScheduleSpec?) {
        guard let quiet = schedule?.quietHours else { return nil }
        var only = ScheduleSpec()
        only.quietHours = quiet
        planner = DuePlanner(spec: only)
    }

    /// `time`, or the end of the quiet hours it falls in, in `zone` (nil, or a zone no longer
    /// known: `time`).
    func hold(_ time: Date, zone: String?) -> Date {
        guard let zone else { return time }
        let tz: TimeZone?
        if let known = zones[zone] { tz = known } else { tz = TimeZoneText.zone(zone); zones[zone] = tz }
        guard let tz, case .at(let held) = planner.due(in: tz, after: time) else { return time }
        return held
    }
}
