import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// The `schedule` section and `audience.timezone_field`: keys, defaults, and a message naming the
/// line for each mistake.
@Suite struct ScheduleJobKeysTests {
    let dir = TemporaryDirectory("job-schedule")

    func load(_ schedule: String, audience: String = ", timezone_field: tz", throttle: String = "") throws -> JobSpec {
        try dir.write("a.csv", "token,tz\n" + String(repeating: "ab", count: 32) + ",UTC\n")
        let path = try dir.write("jobs/job.yaml", """
            campaign: c
            audience: { files: [../a.csv]\(audience) }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template: { aps: { alert: "x" } } }
            schedule: \(schedule)
            \(throttle)
            """)
        return try JobLoader.load(path: path)
    }

    @Test func keysAndDefaults() throws {
        let spec = try load("""
            { default_timezone: America/New_York, local_time: { from: "09:00", to: "11:00" }, date: 2026-12-01,
                        quiet_hours: { from: "21:00", to: "08:00" }, wait: false }
            """)
        let s = try #require(spec.schedule)
        #expect(spec.audience.timezoneField == "tz")
        #expect(s.defaultTimezone == "America/New_York" && s.localTime?.description == "09:00–11:00" && s.date?.description == "2026-12-01")
        #expect(s.quietHours?.crossesMidnight == true && s.wait == false)
        let quiet = try #require(try load("{ quiet_hours: { from: \"22:00\", to: \"07:00\" } }", audience: "").schedule)
        #expect(quiet.defaultTimezone == "UTC" && quiet.localTime == nil && quiet.wait == true)
    }

    @Test(arguments: [
        ("{ wait: true }", "schedule needs local_time, quiet_hours or both"),
        ("{ local_time: { from: \"9:00\", to: \"11:00\" } }", "schedule.local_time.from must be a local time written 09:00"),
        ("{ local_time: { from: \"09:00\" } }", "schedule.local_time.to is required"),
        ("{ local_time: { from: \"09:00\", to: \"09:00\" } }", "schedule.local_time is empty"),
        ("{ local_time: { from: \"24:00\", to: \"09:00\" } }", "schedule.local_time.from must be before 24:00"),
        ("{ quiet_hours: { from: \"21:00\", to: \"08:00\" }, date: 2026-12-01 }", "schedule.date is the date of local_time"),
        ("{ local_time: { from: \"09:00\", to: \"10:00\" }, date: 2026-02-30 }", "schedule.date must be a date written 2026-12-01"),
        ("{ local_time: { from: \"22:00\", to: \"23:00\" }, quiet_hours: { from: \"21:00\", to: \"08:00\" } }", "cover the whole of local_time"),
        ("{ local_time: { from: \"09:00\", to: \"11:00\" }, quiet_hours: { from: \"00:00\", to: \"24:00\" } }", "cover the whole day"),
        ("{ quiet_hours: { from: \"00:00\", to: \"24:00\" } }", "schedule.quiet_hours (00:00–24:00) cover the whole day"),
        ("{ local_time: { from: \"22:00\", to: \"24:00\" }, quiet_hours: { from: \"21:00\", to: \"24:00\" } }", "cover the whole of local_time"),
        ("{ quiet_hours: { from: \"21:00\", to: \"08:00\" }, default_timezone: Mars/Base }", "schedule.default_timezone must be a time zone name"),
        ("{ quiet_hours: { from: \"21:00\", to: \"08:00\" }, every: day }", "unknown key \"schedule.every\""),
        ("{ localtime: { from: \"09:00\", to: \"11:00\" } }", "unknown key \"schedule.localtime\": did you mean \"schedule.local_time\"?"),
    ])
    func mistakesAreNamedWithTheirLine(schedule: String, message: String) throws {
        let error = try #require(throws: JobError.self) { try load(schedule) }
        #expect(error.description.contains(message), "\(error)")
        #expect(error.description.contains("line "), "\(error)")
    }

    /// A misspelt section or key is named first (with its line and the nearest known key), not by
    /// the error its absence causes ("audience is required").
    @Test func aMisspeltKeyIsNamedBeforeWhatItsAbsenceCauses() throws {
        try dir.write("a.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        let path = try dir.write("jobs/typo.yaml", """
            campaign: c
            audiense: { files: [../a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template: { aps: { alert: "x" } } }
            """)
        let error = try #require(throws: JobError.self) { try JobLoader.load(path: path) }
        #expect(error.description.contains("line 2") && error.description.contains("unknown key \"audiense\": did you mean \"audience\"?"), "\(error)")
        let files = try dir.write("jobs/typo2.yaml", """
            campaign: c
            audience: { file: [../a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template: { aps: { alert: "x" } } }
            """)
        let e2 = try #require(throws: JobError.self) { try JobLoader.load(path: files) }
        #expect(e2.description.contains("unknown key \"audience.file\": did you mean \"audience.files\"?"), "\(e2)")
        let far = try dir.write("jobs/typo3.yaml", """
            campaign: c
            audience: { files: [../a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template: { aps: { alert: "x" } } }
            colour: blue
            """)
        let e3 = try #require(throws: JobError.self) { try JobLoader.load(path: far) }
        #expect(e3.description.contains("unknown key \"colour\" (known keys:") && !e3.description.contains("did you mean"), "\(e3)")
    }

    /// `24:00` ends the day: quiet hours that reach it cover a window up to it, and only that.
    @Test func quietHoursEndingAt2400CoverWhatTheyCover() throws {
        let partly = try #require(try load("{ local_time: { from: \"23:00\", to: \"01:00\" }, quiet_hours: { from: \"12:00\", to: \"24:00\" } }").schedule)
        #expect(partly.quietHours?.to.minutes == 1440 && partly.quietHours?.crossesMidnight == false)
        _ = try load("{ local_time: { from: \"09:00\", to: \"11:00\" }, quiet_hours: { from: \"22:00\", to: \"24:00\" } }")
    }

    @Test func aTimeZoneFieldNeedsASchedule() throws {
        try dir.write("a.csv", "token,tz\n" + String(repeating: "ab", count: 32) + ",UTC\n")
        let path = try dir.write("jobs/nosched.yaml", """
            campaign: c
            audience: { files: [../a.csv], timezone_field: tz }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template: { aps: { alert: "x" } } }
            """)
        let error = try #require(throws: JobError.self) { try JobLoader.load(path: path) }
        #expect(error.description.contains("audience.timezone_field applies to a schedule section"), "\(error)")
    }
}
