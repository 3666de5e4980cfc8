import HeraldCore
import Yams

extension Context {
    /// The `schedule` section: a local sending window, quiet hours, or both, in each recipient's zone.
    func parseSchedule(_ m: inout YAMLMapping) throws(JobError) -> ScheduleSpec {
        let known = ["default_timezone", "local_time", "date", "quiet_hours", "wait"]
        try m.rejectUnknown(known: known)
        var spec = ScheduleSpec()
        if let zone = try m.string("default_timezone") {
            guard TimeZoneText.zone(zone) != nil else {
                throw m.error("default_timezone", "must be a time zone name such as Europe/Paris or UTC, or an offset such as +05:30, not \"\(zone)\"")
            }
            spec.defaultTimezone = zone
        }
        spec.localTime = try span(&m, "local_time")
        spec.quietHours = try span(&m, "quiet_hours")
        if let d = try m.string("date") {
            guard let date = LocalDate(d) else { throw m.error("date", "must be a date written 2026-12-01, not \"\(d)\"") }
            guard spec.localTime != nil else { throw m.error("date", "is the date of local_time, which is not set") }
            spec.date = date
        }
        spec.wait = try m.bool("wait") ?? true
        guard spec.localTime != nil || spec.quietHours != nil else {
            throw JobError(file: file, line: m.line, "schedule needs local_time, quiet_hours or both")
        }
        if let quiet = spec.quietHours, quiet.minutes >= 1440 {
            throw m.error("quiet_hours", "(\(quiet)) cover the whole day: no push could ever start")
        }
        if let window = spec.localTime, let quiet = spec.quietHours, Self.covers(quiet, window) {
            throw m.error("quiet_hours", "(\(quiet)) cover the whole of local_time (\(window)): no push could ever start")
        }
        try m.finish(known: known)
        return spec
    }

    /// `{ from: "09:00", to: "11:00" }`.
    private func span(_ m: inout YAMLMapping, _ key: String) throws(JobError) -> LocalSpan? {
        guard var s = try m.mapping(key) else { return nil }
        func time(_ k: String) throws(JobError) -> LocalClockTime {
            let text = try s.requiredString(k)
            guard let t = LocalClockTime(text) else { throw s.error(k, "must be a local time written 09:00 (00:00 to 24:00), not \"\(text)\"") }
            return t
        }
        let from = try time("from")
        guard from.minutes < 1440 else { throw s.error("from", "must be before 24:00") }
        let span = LocalSpan(from: from, to: try time("to"))
        try s.finish(known: ["from", "to"])
        guard span.from.minutes != span.to.minutes else { throw m.error(key, "is empty: from and to are the same time") }
        return span
    }

    /// Whether every minute of `inner` (on a day without a clock change) is inside `outer`.
    static func covers(_ outer: LocalSpan, _ inner: LocalSpan) -> Bool {
        // `to` may be 24:00 (1440), the end of the day: compared as is, every minute of the day
        // (0...1439) is before it.
        func contains(_ m: Int) -> Bool {
            let from = outer.from.minutes, to = outer.to.minutes, x = m % 1440
            return outer.crossesMidnight ? (x >= from || x < to) : (x >= from && x < to)
        }
        return stride(from: inner.from.minutes, to: inner.from.minutes + inner.minutes, by: 1).allSatisfy(contains)
    }
}
