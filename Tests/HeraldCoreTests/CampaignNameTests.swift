import Foundation
import HeraldCore
import Testing

@Suite struct CampaignNameTests {
    func utc(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    @Test func periodsAreUTCAndWeeksAreISO() {
        let name = CampaignName("promo-{date}-{week}-{month}")
        #expect(name.isPeriodic)
        #expect(name.resolved(at: utc("2026-11-21T23:59:59Z")) == "promo-2026-11-21-2026-W47-2026-11")
        // 2027-01-01 is a Friday: ISO week 53 of 2026.
        #expect(name.resolved(at: utc("2027-01-01T00:00:00Z")) == "promo-2027-01-01-2026-W53-2027-01")
        // 2024-12-30 is a Monday: ISO week 1 of 2025.
        #expect(CampaignName("w-{week}").resolved(at: utc("2024-12-30T12:00:00Z")) == "w-2025-W01")
    }

    @Test func aFixedNameIsItself() {
        let name = CampaignName("spring-sale")
        #expect(!name.isPeriodic)
        #expect(name.resolved(at: Date()) == "spring-sale")
        #expect(name.invalidCharacter == nil)
        #expect(CampaignName("a/{date}").invalidCharacter == "/")
        #expect(CampaignName("a-{day}").invalidCharacter == "{")
    }

    @Test func reportPathsResolveCampaignAndPeriod() {
        let path = CampaignName.resolvePath("/r/{campaign}/{month}", campaign: "daily-2026-11-21", startedAt: utc("2026-11-21T10:00:00Z"))
        #expect(path == "/r/daily-2026-11-21/2026-11")
    }
}
