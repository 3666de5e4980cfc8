import Foundation
import HeraldCore
import Testing

/// Each recipient's due time from the job's `schedule`, with the clock injected: the zones and
/// clock changes a campaign meets, fixed offsets, and quiet hours across midnight.
@Suite struct DuePlannerTests {
    let iso: ISO8601DateFormatter = {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f
    }()

    func at(_ text: String) -> Date { iso.date(from: text)! }
    func zone(_ text: String) -> TimeZone { TimeZoneText.zone(text)! }
    func span(_ from: String, _ to: String) -> LocalSpan { LocalSpan(from: LocalClockTime(from)!, to: LocalClockTime(to)!) }

    func planner(window: (String, String)? = nil, date: String? = nil, quiet: (String, String)? = nil) -> DuePlanner {
        var s = ScheduleSpec()
        s.localTime = window.map { span($0.0, $0.1) }
        s.date = date.flatMap(LocalDate.init)
        s.quietHours = quiet.map { span($0.0, $0.1) }
        return DuePlanner(spec: s)
    }

    func due(_ p: DuePlanner, _ z: String, now: String) -> String {
        switch p.due(in: zone(z), after: at(now)) {
        case .at(let d): return iso.string(from: d)
        case .never: return "never"
        }
    }

    @Test func oneLocalDateAcrossTheWorld() {
        let p = planner(window: ("09:00", "11:00"), date: "2026-12-01")
        let now = "2026-11-25T12:00:00Z"
        #expect(due(p, "Pacific/Kiritimati", now: now) == "2026-11-30T19:00:00Z", "+14: first")
        #expect(due(p, "Asia/Kathmandu", now: now) == "2026-12-01T03:15:00Z", "+05:45")
        #expect(due(p, "Asia/Kolkata", now: now) == "2026-12-01T03:30:00Z", "+05:30")
        #expect(due(p, "+05:30", now: now) == "2026-12-01T03:30:00Z", "an offset written +05:30")
        #expect(due(p, "Europe/Paris", now: now) == "2026-12-01T08:00:00Z")
        #expect(due(p, "UTC", now: now) == "2026-12-01T09:00:00Z")
        #expect(due(p, "America/New_York", now: now) == "2026-12-01T14:00:00Z")
        #expect(due(p, "-0800", now: now) == "2026-12-01T17:00:00Z", "an offset written -0800")
        #expect(due(p, "Pacific/Pago_Pago", now: now) == "2026-12-01T20:00:00Z", "−11: 25 hours after Kiritimati")
        // Inside the window: now. After it, on a fixed date: never (window_missed).
        #expect(due(p, "Pacific/Kiritimati", now: "2026-11-30T20:00:00Z") == "2026-11-30T20:00:00Z")
        #expect(due(p, "Pacific/Kiritimati", now: "2026-11-30T21:00:00Z") == "never")
    }

    @Test func newYorkAcrossBothClockChanges() {
        // 2026-03-08: 02:00 EST becomes 03:00 EDT (07:00Z). 02:30 does not exist: the first minute after the gap.
        #expect(due(planner(window: ("02:30", "04:00"), date: "2026-03-08"), "America/New_York", now: "2026-03-01T00:00:00Z") == "2026-03-08T07:00:00Z")
        #expect(due(planner(window: ("09:00", "11:00"), date: "2026-03-07"), "America/New_York", now: "2026-03-01T00:00:00Z") == "2026-03-07T14:00:00Z")
        #expect(due(planner(window: ("09:00", "11:00"), date: "2026-03-08"), "America/New_York", now: "2026-03-01T00:00:00Z") == "2026-03-08T13:00:00Z")
        // 2026-11-01: 02:00 EDT becomes 01:00 EST (06:00Z). 01:30 happens twice: the first one, in EDT.
        #expect(due(planner(window: ("01:30", "03:00"), date: "2026-11-01"), "America/New_York", now: "2026-10-01T00:00:00Z") == "2026-11-01T05:30:00Z")
        #expect(due(planner(window: ("09:00", "11:00"), date: "2026-11-01"), "America/New_York", now: "2026-10-01T00:00:00Z") == "2026-11-01T14:00:00Z")
        // Without a date, the window after a run that starts the night of the change.
        #expect(due(planner(window: ("09:00", "11:00")), "America/New_York", now: "2026-03-08T06:00:00Z") == "2026-03-08T13:00:00Z")
        // Quiet hours that end in the gap end at the first minute after it.
        #expect(due(planner(quiet: ("01:00", "02:30")), "America/New_York", now: "2026-03-08T06:30:00Z") == "2026-03-08T07:00:00Z")
    }

    @Test func parisAcrossItsSpringChange() {
        // 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00Z).
        #expect(due(planner(window: ("02:15", "05:00"), date: "2026-03-29"), "Europe/Paris", now: "2026-03-20T00:00:00Z") == "2026-03-29T01:00:00Z")
        #expect(due(planner(window: ("09:00", "11:00"), date: "2026-03-28"), "Europe/Paris", now: "2026-03-20T00:00:00Z") == "2026-03-28T08:00:00Z")
        #expect(due(planner(window: ("09:00", "11:00"), date: "2026-03-29"), "Europe/Paris", now: "2026-03-20T00:00:00Z") == "2026-03-29T07:00:00Z")
    }

    @Test func eachRecipientsFirstWindowAfterTheRunStarts() {
        let p = planner(window: ("09:00", "11:00"))
        #expect(due(p, "UTC", now: "2026-12-01T08:00:00Z") == "2026-12-01T09:00:00Z", "today's, still to come")
        #expect(due(p, "UTC", now: "2026-12-01T10:00:00Z") == "2026-12-01T10:00:00Z", "today's, open: now")
        #expect(due(p, "UTC", now: "2026-12-01T11:00:00Z") == "2026-12-02T09:00:00Z", "today's is over: tomorrow's")
        #expect(due(p, "Asia/Tokyo", now: "2026-12-01T10:00:00Z") == "2026-12-02T00:00:00Z", "19:00 in Tokyo: tomorrow 09:00")
        // A window across midnight that opened yesterday is still open.
        let night = planner(window: ("22:00", "02:00"))
        #expect(due(night, "UTC", now: "2026-12-01T01:00:00Z") == "2026-12-01T01:00:00Z")
        #expect(due(night, "UTC", now: "2026-12-01T03:00:00Z") == "2026-12-01T22:00:00Z")
    }

    @Test func quietHoursAcrossMidnight() {
        let p = planner(quiet: ("21:00", "08:00"))
        #expect(due(p, "UTC", now: "2026-12-01T12:00:00Z") == "2026-12-01T12:00:00Z")
        #expect(due(p, "UTC", now: "2026-12-01T21:00:00Z") == "2026-12-02T08:00:00Z", "from is inside")
        #expect(due(p, "UTC", now: "2026-12-01T23:30:00Z") == "2026-12-02T08:00:00Z")
        #expect(due(p, "UTC", now: "2026-12-02T07:59:00Z") == "2026-12-02T08:00:00Z")
        #expect(due(p, "UTC", now: "2026-12-02T08:00:00Z") == "2026-12-02T08:00:00Z", "to is outside")
        #expect(due(p, "Asia/Kolkata", now: "2026-12-01T16:00:00Z") == "2026-12-02T02:30:00Z", "21:30 in Kolkata: 08:00 there")
        // With a window that starts inside them: at their end.
        #expect(due(planner(window: ("07:00", "10:00"), quiet: ("21:00", "08:00")), "UTC", now: "2026-12-01T05:00:00Z") == "2026-12-01T08:00:00Z")
        // A window the quiet hours cover whole never opens.
        #expect(due(planner(window: ("22:00", "23:00"), quiet: ("21:00", "08:00")), "UTC", now: "2026-12-01T05:00:00Z") == "never")
        #expect(due(planner(window: ("07:00", "08:00"), date: "2026-12-01", quiet: ("21:00", "08:00")), "UTC", now: "2026-11-30T05:00:00Z") == "never")
    }

    @Test func textsAreReadStrictly() {
        #expect(LocalClockTime("09:00")?.minutes == 540 && LocalClockTime("24:00")?.minutes == 1440)
        for bad in ["9:00", "24:30", "23:60", "0900", "ab:cd", ""] { #expect(LocalClockTime(bad) == nil, "\(bad)") }
        #expect(LocalDate("2028-02-29") != nil && LocalDate("2026-02-29") == nil && LocalDate("2026-13-01") == nil && LocalDate("26-12-01") == nil)
        #expect(LocalDate("2026-12-01")?.dayNumber == Int(at("2026-12-01T00:00:00Z").timeIntervalSince1970 / 86_400))
        #expect(LocalDate("1969-12-31")?.dayNumber == -1)
        #expect(TimeZoneText.zone("+05:30")?.secondsFromGMT() == 19_800 && TimeZoneText.zone("-0800")?.secondsFromGMT() == -28_800)
        #expect(TimeZoneText.zone("+05")?.secondsFromGMT() == 18_000 && TimeZoneText.zone("Z")?.secondsFromGMT() == 0)
        for bad in ["Mars/Olympus_Mons", "EST", "PST", "+15:00", "+5:30", "05:30", "+05:3", "+05:30:00", "europe/nowhere", ""] {
            #expect(TimeZoneText.zone(bad) == nil, "\(bad)")
        }
        #expect(TimeZoneText.zone("UTC") != nil && TimeZoneText.zone("Europe/Kyiv") != nil)
    }

    /// A daily campaign (`{date}`, no `date`): each zone's span is the one that starts within the
    /// campaign's UTC day, so the campaigns of consecutive days, each started whenever cron starts
    /// it that day, give every zone consecutive local dates: never one twice, never one skipped,
    /// through both of 2026's clock changes.
    @Test func dailyCampaignsSplitEveryZonesSpansBetweenThem() throws {
        var s = ScheduleSpec()
        s.localTime = span("09:00", "11:00")
        let daily = try #require(s.dailyPeriod(campaign: CampaignName("digest-{date}"), runStarted: at("2026-03-01T15:42:00Z")))
        #expect(daily == at("2026-03-01T00:00:00Z"))
        #expect(s.dailyPeriod(campaign: CampaignName("digest-{week}"), runStarted: daily) == nil)
        let zones = ["Pacific/Kiritimati", "Pacific/Chatham", "Pacific/Auckland", "Australia/Lord_Howe", "Australia/Sydney", "Asia/Tokyo",
                     "Asia/Kathmandu", "Asia/Kolkata", "Europe/Paris", "Europe/London", "UTC", "Atlantic/Azores", "America/Sao_Paulo",
                     "America/St_Johns", "America/New_York", "America/Los_Angeles", "Pacific/Honolulu", "Pacific/Pago_Pago", "-12:00", "+14:00"]
        for name in zones {
            let z = zone(name)
            var days: [Int] = []
            for d in 0..<370 {
                let start = at("2026-01-01T00:00:00Z").addingTimeInterval(Double(d) * 86_400)
                let p = DuePlanner(spec: s, period: start)
                // Started at the UTC day's start: the zone's span of this campaign, whenever it is.
                guard case .at(let due) = p.due(in: z, after: start) else { Issue.record("\(name) day \(d): never"); break }
                days.append(DuePlanner.localDay(of: due.timeIntervalSince1970, in: z))
                #expect(due >= start && due < start.addingTimeInterval(86_400), "\(name) day \(d): the span starts within the UTC day")
            }
            #expect(zip(days, days.dropFirst()).allSatisfy { $1 == $0 + 1 }, "\(name): consecutive local dates, each once")
        }
        // A campaign started after a zone's span of its day has closed misses it, and does not take
        // the next day's: Tokyo's 09:00–11:00 is 00:00–02:00 UTC.
        let p = DuePlanner(spec: s, period: at("2026-03-01T00:00:00Z"))
        #expect(p.due(in: zone("Asia/Tokyo"), after: at("2026-03-01T03:00:00Z")) == .never)
        #expect(p.due(in: zone("Asia/Tokyo"), after: at("2026-03-01T01:00:00Z")) == .at(at("2026-03-01T01:00:00Z")))
        #expect(p.due(in: zone("America/New_York"), after: at("2026-03-01T03:00:00Z")) == .at(at("2026-03-01T14:00:00Z")))
    }

    /// The tz database's links (its `backward` file) are names people still write; the bare
    /// abbreviations that ignore summer time, and the abbreviations Foundation maps, are not.
    @Test(arguments: ["Japan", "Singapore", "Israel", "Egypt", "NZ", "GB", "Eire", "Poland", "Portugal", "Cuba", "UCT", "Zulu",
                      "CET", "EET", "MET", "WET", "EST5EDT", "PST8PDT", "US/Eastern", "GMT", "Asia/Calcutta"])
    func tzDatabaseLinksAreZones(name: String) throws {
        let zone = try #require(TimeZoneText.zone(name), "\(name)")
        #expect(zone.secondsFromGMT() == TimeZone(identifier: name)?.secondsFromGMT())
    }

    @Test(arguments: ["EST", "MST", "HST", "PST", "BST", "IST", "JST", "Factory", "localtime", "posixrules", "zone.tab", "../zoneinfo/UTC", "Foo"])
    func abbreviationsAndNonZonesAreRefused(name: String) {
        #expect(TimeZoneText.zone(name) == nil, "\(name)")
    }

    @Test func aPastDateIsOnlyOverOnceItsWindowHasClosedAtUTCMinus14() throws {
        var spec = ScheduleSpec()
        spec.localTime = LocalSpan(from: try #require(LocalClockTime("09:00")), to: try #require(LocalClockTime("11:00")))
        spec.date = LocalDate("2026-12-01")
        // 11:00 at UTC−14:00 on 2026-12-01 is 2026-12-02T01:00Z.
        #expect(spec.dateClosesEverywhere == at("2026-12-02T01:00:00Z"))
        #expect(spec.pastDateProblem(at: at("2026-12-02T00:59:59Z")) == nil)
        let problem = try #require(spec.pastDateProblem(at: at("2026-12-02T01:00:00Z")))
        #expect(problem.contains("schedule.date 2026-12-01 is in the past") && problem.contains("2026-12-02T01:00:00Z"), "\(problem)")
        spec.localTime = LocalSpan(from: try #require(LocalClockTime("22:00")), to: try #require(LocalClockTime("02:00")))
        #expect(spec.dateClosesEverywhere == at("2026-12-02T16:00:00Z"), "a window across midnight closes on the next day")
        spec.date = nil
        #expect(spec.pastDateProblem(at: at("2030-01-01T00:00:00Z")) == nil)
    }
}
