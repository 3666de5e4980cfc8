import Foundation
import HeraldCore
@testable import HeraldPipeline
import Testing

/// A retry that falls in its recipient's quiet hours is held until they end, in that recipient's zone.
@Suite struct QuietHoursTests {
    func at(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    @Test func aRetryInTheQuietHoursWaitsForTheirEnd() throws {
        var schedule = ScheduleSpec()
        schedule.quietHours = LocalSpan(from: LocalClockTime("21:00")!, to: LocalClockTime("08:00")!)
        let quiet = try #require(QuietHours(schedule: schedule))
        #expect(quiet.hold(at("2026-12-01T12:00:05Z"), zone: "Europe/Paris") == at("2026-12-01T12:00:05Z"), "13:00 in Paris: not held")
        #expect(quiet.hold(at("2026-12-01T20:30:00Z"), zone: "Europe/Paris") == at("2026-12-02T07:00:00Z"), "21:30 in Paris: 08:00 there")
        #expect(quiet.hold(at("2026-12-01T20:30:00Z"), zone: "UTC") == at("2026-12-01T20:30:00Z"))
        #expect(quiet.hold(at("2026-12-01T16:00:00Z"), zone: "+05:30") == at("2026-12-02T02:30:00Z"))
        #expect(quiet.hold(at("2026-12-01T20:30:00Z"), zone: nil) == at("2026-12-01T20:30:00Z"), "no zone recorded: not held")
        #expect(QuietHours(schedule: ScheduleSpec()) == nil && QuietHours(schedule: nil) == nil)
    }
}
