import Foundation
import HeraldCore
@testable import HeraldPipeline
import Testing

/// The schedule checked again as a claimed recipient leaves: a first push only inside its local
/// window and outside its quiet hours, a retry only outside its quiet hours, each in its own zone.
@Suite struct LocalTimeCheckTests {
    func at(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    func check(window: (String, String)? = nil, date: String? = nil, quiet: (String, String)? = nil, deadline: Int? = nil,
               defaultZone: String = "UTC") throws -> LocalTimeCheck {
        var schedule = ScheduleSpec()
        schedule.localTime = window.map { LocalSpan(from: LocalClockTime($0.0)!, to: LocalClockTime($0.1)!) }
        schedule.quietHours = quiet.map { LocalSpan(from: LocalClockTime($0.0)!, to: LocalClockTime($0.1)!) }
        schedule.date = date.flatMap(LocalDate.init)
        schedule.defaultTimezone = defaultZone
        var job = JobSpec(jobFile: "job.yaml", campaign: "c", audience: AudienceSpec(files: []),
                          apns: APNsSpec(endpoint: .simulator, topic: "com.example.app", auth: nil),
                          push: PushSpec(type: .alert, priority: 10, template: .object([])),
                          throttle: ThrottleSpec(deadline: deadline.map { ThrottleDeadline(at: $0) }), retry: RetrySpec(),
                          statePath: "/nonexistent/c.sqlite", reports: ReportsSpec(dir: "/nonexistent"))
        job.schedule = schedule
        return try #require(LocalTimeCheck(job: job, runStarted: Date()))
    }

    @Test func aRetryInTheQuietHoursWaitsForTheirEnd() throws {
        let quiet = try check(quiet: ("21:00", "08:00"))
        #expect(quiet.holdRetry(at("2026-12-01T12:00:05Z"), zone: "Europe/Paris") == at("2026-12-01T12:00:05Z"), "13:00 in Paris: not held")
        #expect(quiet.holdRetry(at("2026-12-01T20:30:00Z"), zone: "Europe/Paris") == at("2026-12-02T07:00:00Z"), "21:30 in Paris: 08:00 there")
        #expect(quiet.holdRetry(at("2026-12-01T20:30:00Z"), zone: "UTC") == at("2026-12-01T20:30:00Z"))
        #expect(quiet.holdRetry(at("2026-12-01T16:00:00Z"), zone: "+05:30") == at("2026-12-02T02:30:00Z"))
        #expect(quiet.holdRetry(at("2026-12-01T21:30:00Z"), zone: nil) == at("2026-12-02T08:00:00Z"), "no zone recorded: the default zone")
        #expect(quiet.holdRetry(at("2026-12-01T21:30:00Z"), zone: "Mars/Base") == at("2026-12-01T21:30:00Z"), "a zone no longer known: not held")
        #expect(LocalTimeCheck(job: JobSpec(jobFile: "j", campaign: "c", audience: AudienceSpec(files: []),
                                            apns: APNsSpec(endpoint: .simulator, topic: "t", auth: nil),
                                            push: PushSpec(type: .alert, priority: 10, template: .object([])), throttle: ThrottleSpec(),
                                            retry: RetrySpec(), statePath: "/x", reports: ReportsSpec(dir: "/x")), runStarted: Date()) == nil)
    }

    /// A run that starts after the window closed (cron at 15:00 for 09:00–11:00) holds first pushes
    /// for the next window; retries only care about the quiet hours.
    @Test func aFirstPushOnlyInsideItsWindowARetryOnlyOutsideTheQuietHours() throws {
        let c = try check(window: ("09:00", "11:00"), quiet: ("21:00", "08:00"))
        #expect(c.check(zone: "Europe/Paris", attempts: 1, leaves: at("2026-12-01T08:30:00Z")) == .open, "09:30 in Paris")
        #expect(c.check(zone: "Europe/Paris", attempts: 1, leaves: at("2026-12-01T09:59:59Z")) == .open, "the stretch worked out at 09:30 still holds")
        #expect(c.check(zone: "Europe/Paris", attempts: 1, leaves: at("2026-12-01T10:00:00Z")) == .hold(until: at("2026-12-02T08:00:00Z")),
                "11:00 in Paris: the window has closed, tomorrow's")
        #expect(c.check(zone: "Europe/Paris", attempts: 2, leaves: at("2026-12-01T14:00:00Z")) == .open, "a retry at 15:00 goes")
        #expect(c.check(zone: "Europe/Paris", attempts: 2, leaves: at("2026-12-01T20:00:00Z")) == .hold(until: at("2026-12-02T07:00:00Z")),
                "a retry at 21:00 waits for 08:00")
        #expect(c.check(zone: nil, attempts: 1, leaves: at("2026-12-01T09:10:00Z")) == .open, "the default zone, UTC")
        #expect(c.check(zone: "America/New_York", attempts: 1, leaves: at("2026-12-01T09:10:00Z")) == .hold(until: at("2026-12-01T14:00:00Z")))
    }

    /// Real clocks are not whole seconds, and `Date()` keeps its time from 2001, not 1970: a time
    /// inside the window is open whatever its fraction (a UNIX-seconds round trip may move it by
    /// an ulp, which must not read as "later": each such push would be held and claimed again).
    @Test func anInstantInsideTheWindowIsOpenWhateverItsFraction() throws {
        let base = at("2026-12-01T09:30:00Z").timeIntervalSinceReferenceDate
        for _ in 0..<2_000 {
            let c = try check(window: ("09:00", "11:00"), quiet: ("21:00", "08:00"))
            let leaves = Date(timeIntervalSinceReferenceDate: base + Double.random(in: 0..<3600))
            #expect(c.check(zone: "UTC", attempts: 1, leaves: leaves) == .open, "\(leaves.timeIntervalSince1970)")
        }
    }

    /// A first push whose window can no longer open is missed: `date` has passed there, or the
    /// window opens after the absolute deadline.
    @Test func aWindowThatCannotOpenAnyMoreIsMissed() throws {
        let dated = try check(window: ("09:00", "11:00"), date: "2026-12-01")
        #expect(dated.check(zone: "UTC", attempts: 1, leaves: at("2026-12-01T12:00:00Z")) == .missed)
        #expect(dated.check(zone: "America/Los_Angeles", attempts: 1, leaves: at("2026-12-01T12:00:00Z")) == .hold(until: at("2026-12-01T17:00:00Z")))
        #expect(dated.check(zone: "UTC", attempts: 2, leaves: at("2026-12-01T12:00:00Z")) == .open, "a retry is not held by the window")
        let deadline = Int(at("2026-12-01T20:00:00Z").timeIntervalSince1970)
        let early = try check(window: ("09:00", "11:00"), deadline: deadline)
        #expect(early.check(zone: "UTC", attempts: 1, leaves: at("2026-12-01T12:00:00Z")) == .missed, "tomorrow's window is after the deadline")
        #expect(early.check(zone: "America/Los_Angeles", attempts: 1, leaves: at("2026-12-01T12:00:00Z")) == .hold(until: at("2026-12-01T17:00:00Z")))
    }
}
