import Foundation
import HeraldCore
@testable import HeraldReports
import HeraldState
import Testing

/// summary.json's `experiment` and summary.html's Experiment section, from the arms a run counted.
@Suite struct ExperimentSummaryTests {
    static func summary(experiment: [VariantCount]?, counts: [RecipientStatus: Int]) -> Summary {
        var byStatus: [RecipientStatus: Int] = [:]
        for s in RecipientStatus.allCases { byStatus[s] = counts[s] ?? 0 }
        let distinct = counts.values.reduce(0, +)
        var s = Summary(campaign: "c", runId: "r", startedAt: "2026-11-28T00:00:00.000Z", finishedAt: nil, rows: distinct, valid: distinct,
                        distinct: distinct, invalid: 0, duplicates: 0, byStatus: byStatus, byReason: [:], invalidByReason: [:],
                        extra: SummaryExtras())
        s.experiment = experiment
        return s
    }

    static let arms = VariantCount.ordered([
        VariantCount(variant: nil, rollout: true, counts: [.awaitingWinner: 70]),
        VariantCount(variant: "b", rollout: false, counts: [.sent: 9, .failed: 1]),
        VariantCount(variant: "holdout", rollout: false, counts: [.heldOut: 5]),
        VariantCount(variant: "a", rollout: false, counts: [.sent: 15]),
    ])

    @Test func armsAreOrderedTestHoldoutRolloutWaiting() {
        #expect(Self.arms.map(\.variant) == ["a", "b", "holdout", nil])
        let rolledOut = VariantCount.ordered([VariantCount(variant: "b", rollout: true, counts: [.sent: 1])] + Self.arms)
        #expect(rolledOut.map { "\($0.variant ?? "-")/\($0.rollout)" } == ["a/false", "b/false", "holdout/false", "b/true", "-/true"])
    }

    @Test func summaryJSONHasEachArmsCounts() throws {
        let s = Self.summary(experiment: Self.arms, counts: [.sent: 24, .failed: 1, .heldOut: 5, .awaitingWinner: 70])
        let o = try #require(try JSONSerialization.jsonObject(with: Data(s.json.utf8)) as? [String: Any])
        let e = try #require(o["experiment"] as? [String: Any])
        #expect(e["winner"] is NSNull)
        let arms = try #require(e["arms"] as? [[String: Any]])
        #expect(arms.count == 4)
        #expect(arms[1]["variant"] as? String == "b" && arms[1]["rollout"] as? Bool == false && arms[1]["recipients"] as? Int == 10)
        #expect((arms[1]["counts"] as? [String: Int])?["failed"] == 1 && (arms[1]["counts"] as? [String: Int])?["sent"] == 9)
        #expect(arms[3]["variant"] is NSNull && arms[3]["rollout"] as? Bool == true)
        #expect((o["counts"] as? [String: Int])?["awaiting_winner"] == 70 && (o["counts"] as? [String: Int])?["held_out"] == 5)

        let rolled = Self.summary(experiment: [VariantCount(variant: "a", rollout: true, counts: [.sent: 3])], counts: [.sent: 3])
        let r = try #require(try JSONSerialization.jsonObject(with: Data(rolled.json.utf8)) as? [String: Any])
        #expect((r["experiment"] as? [String: Any])?["winner"] as? String == "a")
        let plain = try #require(try JSONSerialization.jsonObject(with: Data(Self.summary(experiment: nil, counts: [.sent: 1]).json.utf8)) as? [String: Any])
        #expect(plain["experiment"] is NSNull)
    }

    @Test func summaryPageShowsATableAndABarPerArm() {
        let html = SummaryPage.html(Self.summary(experiment: Self.arms, counts: [.sent: 24, .failed: 1, .heldOut: 5, .awaitingWinner: 70]))
        #expect(html.contains("<table id=\"experiment\">") && html.contains("<svg id=\"experiment-chart\""))
        #expect(html.contains("<tr id=\"variant-a\"><td>a (test)</td><td class=\"num\" data-value=\"15\">"))
        #expect(html.contains("<tr id=\"variant-holdout\"><td>holdout</td>") && html.contains("<tr id=\"variant-waiting\"><td>waiting for the winner</td>"))
        #expect(html.contains("id=\"total-held_out\" data-value=\"5\"") && html.contains("id=\"total-awaiting_winner\" data-value=\"70\""))
        #expect(html.contains("Experiment test finished: 70 recipients wait for the winner"))
        #expect(html.contains("holdout.csv"))

        let plain = SummaryPage.html(Self.summary(experiment: nil, counts: [.sent: 3]))
        #expect(!plain.contains("id=\"experiment\"") && !plain.contains("total-held_out") && !plain.contains("holdout.csv"))
    }
}
