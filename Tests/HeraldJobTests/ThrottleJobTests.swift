import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// The job file's `throttle` section.
@Suite struct ThrottleJobTests {
    let dir = TemporaryDirectory("throttle-job")

    func load(_ throttle: String) throws -> ThrottleSpec {
        try dir.write("samples/a.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        try dir.write("keys/AuthKey_ABC123DEFG.p8", "not read by the loader")
        let path = try dir.write("jobs/job.yaml", JobLoaderTests.minimal + "\n" + throttle + "\n")
        return try JobLoader.load(path: path).throttle
    }

    func error(_ throttle: String) throws -> JobError {
        try #require(throws: JobError.self) { try load(throttle) }
    }

    @Test func frequencyCap() throws {
        let t = try load("throttle: { frequency_cap: { category: marketing, limits: [{ max: 3, per: 24h }, { max: 8, per: 7d }], over_cap: defer } }")
        #expect(t.frequencyCap == FrequencyCap(category: "marketing", limits: [.init(max: 3, per: 86_400), .init(max: 8, per: 604_800)], overCap: .defer))
        #expect(t.frequencyCap?.longest == 604_800)
        #expect(try load("throttle: { frequency_cap: { category: news, limits: [{ max: 1, per: 1h }] } }").frequencyCap?.overCap == .skip)
        for (bad, message) in [
            ("{ limits: [{ max: 1, per: 1h }] }", "throttle.frequency_cap.category is required"),
            ("{ category: \"a b\", limits: [{ max: 1, per: 1h }] }", "throttle.frequency_cap.category may contain only"),
            ("{ category: m }", "throttle.frequency_cap.limits is required"),
            ("{ category: m, limits: [] }", "throttle.frequency_cap.limits must be a list"),
            ("{ category: m, limits: [{ max: 0, per: 1h }] }", "throttle.frequency_cap.limits[0].max"),
            ("{ category: m, limits: [{ max: 1 }] }", "throttle.frequency_cap.limits[0].per is required"),
            ("{ category: m, limits: [{ max: 1, per: 30s }] }", "throttle.frequency_cap.limits[0].per must be from 1m to 366d"),
            ("{ category: m, limits: [{ max: 1, per: 1h }], over_cap: drop }", "throttle.frequency_cap.over_cap must be one of skip, defer"),
        ] {
            let e = try error("throttle: { frequency_cap: \(bad) }")
            #expect(e.description.contains(message) && e.description.contains("line"), "\(bad): \(e)")
        }
    }

    @Test func defaults() throws {
        let t = try load("")
        #expect(t == ThrottleSpec(rate: 0, silentRate: 50, silentPerDevicePerHour: 2, silentOverBudget: .skip, deadline: nil))
    }

    @Test func everyKey() throws {
        let t = try load("throttle: { rate: 250.5, silent_rate: 0.5, silent_per_device_per_hour: 3, silent_over_budget: defer, deadline: 90m }")
        #expect(t == ThrottleSpec(rate: 250.5, silentRate: 0.5, silentPerDevicePerHour: 3, silentOverBudget: .defer,
                                  deadline: ThrottleDeadline(after: 5400)))
    }

    @Test(arguments: [
        ("2h", ThrottleDeadline(after: 7200)),
        ("3600", ThrottleDeadline(after: 3600)),
        ("\"2026-12-01T06:00:00Z\"", ThrottleDeadline(at: 1_796_104_800)),
        ("1796104800", ThrottleDeadline(at: 1_796_104_800)),
        ("{ at: \"2026-12-01T07:00:00+01:00\", after: 45m }", ThrottleDeadline(at: 1_796_104_800, after: 2700)),
        ("{ after: 10s }", ThrottleDeadline(after: 10)),
    ])
    func deadlineSpellings(_ text: String, _ expected: ThrottleDeadline) throws {
        #expect(try load("throttle:\n  deadline: \(text)").deadline == expected)
    }

    @Test func theEarlierBoundOfADeadlineWins() {
        let d = ThrottleDeadline(at: 1_000_000_100, after: 60)
        #expect(d.instant(startedAt: 1_000_000_000) == 1_000_000_060)
        #expect(d.instant(startedAt: 1_000_000_050) == 1_000_000_100)
        #expect(ThrottleDeadline().instant(startedAt: 0) == .infinity)
    }

    @Test(arguments: [
        ("deadline: 0", "throttle.deadline must be a duration from the start of the run"),
        ("deadline: soon", "throttle.deadline must be a duration from the start of the run (90m, 2h), a UNIX time, a UTC time like 2026-12-01T06:00:00Z, or { at: time, after: duration }, not \"soon\""),
        ("deadline: { at: 2h }", "throttle.deadline.at must be a UNIX time or a UTC time"),
        ("deadline: { after: \"2026-12-01T06:00:00Z\" }", "throttle.deadline.after must be a duration such as 90m or 2h"),
        ("deadline: { before: 2h }", "unknown key \"throttle.deadline.before\""),
        ("deadline: {}", "throttle.deadline needs at or after"),
        ("deadline: [2h]", "throttle.deadline must be a duration"),
        ("silent_over_budget: drop", "throttle.silent_over_budget must be one of skip, defer, not \"drop\""),
    ])
    func badThrottleValuesNameTheKey(_ line: String, _ message: String) throws {
        let e = try error("throttle:\n  \(line)")
        #expect(e.message.hasPrefix(message), "\(e.message)")
        #expect(e.line != nil, "the error names the line")
    }
}
