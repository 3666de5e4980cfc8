import Foundation
import HeraldCore
@testable import HeraldState
import HeraldTestSupport
import Testing

/// The frequency-cap ledger in a real herald-shared.sqlite: every limit holds across campaigns of
/// a category, per topic; a resend reuses its slot; a short cap never prunes a longer one's entries.
@Suite struct FrequencyCapLedgerTests {
    let dir = TemporaryDirectory("caps")
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let day = 86_400.0

    func push(_ token: String, _ id: String) -> LedgerPush { LedgerPush(token: token, apnsId: id) }
    var marketing: FrequencyCap { FrequencyCap(category: "marketing", limits: [.init(max: 2, per: 86_400), .init(max: 3, per: 7 * 86_400)]) }

    @Test func everyLimitHoldsAcrossCampaigns() throws {
        let ledger = try SharedStore(path: dir.file("a/herald-shared.sqlite"))
        #expect(try ledger.admit([push("aa", "1"), push("bb", "2")], topic: "t", caps: [marketing], campaign: "a", now: t0) == [.admitted, .admitted])
        #expect(try ledger.admit([push("aa", "3")], topic: "t", caps: [marketing], campaign: "b", now: t0.addingTimeInterval(60)) == [.admitted])
        // Two in 24 h: the next opens when the first leaves the day.
        #expect(try ledger.admit([push("aa", "4")], topic: "t", caps: [marketing], campaign: "c", now: t0.addingTimeInterval(120))
                == [.overCap(category: "marketing", opensAt: t0.addingTimeInterval(day))])
        // Another topic (another app) and another category count apart.
        #expect(try ledger.admit([push("aa", "5")], topic: "other", caps: [marketing], campaign: "c", now: t0.addingTimeInterval(120)) == [.admitted])
        let news = FrequencyCap(category: "news", limits: [.init(max: 1, per: 3600)])
        #expect(try ledger.admit([push("aa", "6")], topic: "t", caps: [news], campaign: "n", now: t0.addingTimeInterval(120)) == [.admitted])
        // A day later the daily limit has room, and the third of the week is taken; the fourth waits for the week.
        #expect(try ledger.admit([push("aa", "7")], topic: "t", caps: [marketing], campaign: "d", now: t0.addingTimeInterval(day + 10)) == [.admitted])
        #expect(try ledger.admit([push("aa", "8")], topic: "t", caps: [marketing], campaign: "d", now: t0.addingTimeInterval(2 * day + 100))
                == [.overCap(category: "marketing", opensAt: t0.addingTimeInterval(7 * day))])
        #expect(try ledger.pushCount(marketing, topic: "t", token: "aa", window: 7 * day, now: t0.addingTimeInterval(2 * day)) == 3)
    }

    @Test func aResendReusesItsSlot() throws {
        let ledger = try SharedStore(path: dir.file("r/herald-shared.sqlite"))
        let cap = FrequencyCap(category: "m", limits: [.init(max: 1, per: 86_400)])
        #expect(try ledger.admit([push("aa", "x")], topic: "t", caps: [cap], campaign: "a", now: t0) == [.admitted])
        #expect(try ledger.admit([push("aa", "x")], topic: "t", caps: [cap], campaign: "a", now: t0.addingTimeInterval(30)) == [.admitted])
        #expect(try ledger.pushCount(cap, topic: "t", token: "aa", window: day, now: t0.addingTimeInterval(30)) == 1)
        #expect(try ledger.admit([push("aa", "y")], topic: "t", caps: [cap], campaign: "b", now: t0.addingTimeInterval(30))
                == [.overCap(category: "m", opensAt: t0.addingTimeInterval(day))])
    }

    @Test func aShortCapNeverPrunesALongerOnesEntries() throws {
        let ledger = try SharedStore(path: dir.file("p/herald-shared.sqlite"))
        let weekly = FrequencyCap(category: "m", limits: [.init(max: 1, per: 7 * 86_400)])
        let hourly = FrequencyCap(category: "m", limits: [.init(max: 5, per: 3600)])
        #expect(try ledger.admit([push("aa", "1")], topic: "t", caps: [weekly], campaign: "w", now: t0) == [.admitted])
        // A job with a one-hour cap runs two days later: the weekly entry must survive it.
        #expect(try ledger.admit([push("bb", "2")], topic: "t", caps: [hourly], campaign: "h", now: t0.addingTimeInterval(2 * day)) == [.admitted])
        #expect(try ledger.admit([push("aa", "3")], topic: "t", caps: [weekly], campaign: "w", now: t0.addingTimeInterval(3 * day))
                == [.overCap(category: "m", opensAt: t0.addingTimeInterval(7 * day))])
    }
}
