import Foundation
import HeraldCore
import HeraldDelivery
@testable import HeraldPipeline
import HeraldState
import Testing

/// What the state file keeps of an answer's apns-id: nothing when APNs echoes ours (the reports
/// show ours then), the answer's own when it differs.
@Suite struct OutcomeDecisionTests {
    static let ours = "00000000-0000-5000-8000-000000000001"

    static func claimed() throws -> ClaimedRecipient {
        ClaimedRecipient(seq: 7, token: try DeviceToken.normalize(String(repeating: "ab", count: 32)).get(), payload: [],
                         apnsId: ours, attempts: 0, headers: nil, claimedAt: Date(timeIntervalSince1970: 1_000))
    }

    static func outcome(_ verdict: OutcomeDecision.Verdict) -> AttemptOutcome? {
        switch verdict {
        case .sent(let o), .failed(let o, _), .retry(let o, _): return o
        case .abort: return nil
        }
    }

    @Test func anEchoedApnsIdIsNotStoredTwice() throws {
        let c = try Self.claimed()
        let sent = Self.outcome(OutcomeDecision.decide(.answered(status: 200, apnsId: Self.ours, reason: nil, timestamp: nil), for: c))
        #expect(sent?.status == .sent && sent?.responseApnsId == nil)
        let gone = Self.outcome(OutcomeDecision.decide(.answered(status: 410, apnsId: Self.ours, reason: "Unregistered", timestamp: 5), for: c))
        #expect(gone?.status == .failed && gone?.responseApnsId == nil && gone?.invalidatedAt == 5)
        #expect(gone?.attemptedAt == c.claimedAt)
    }

    @Test func aDifferentApnsIdIsKept() throws {
        let c = try Self.claimed()
        let other = "11111111-2222-4333-8444-555555555555"
        let sent = Self.outcome(OutcomeDecision.decide(.answered(status: 200, apnsId: other, reason: nil, timestamp: nil), for: c))
        #expect(sent?.responseApnsId == other)
        let busy = Self.outcome(OutcomeDecision.decide(.answered(status: 503, apnsId: other, reason: "ServiceUnavailable", timestamp: nil), for: c))
        #expect(busy?.status == .retry && busy?.responseApnsId == other)
    }
}

/// `apns.environment_fallback`: BadDeviceToken moves a recipient to the other environment once;
/// no other answer does, and never twice.
@Suite struct EnvironmentFallbackDecisionTests {
    func claimed(fellBack: Bool = false) throws -> ClaimedRecipient {
        ClaimedRecipient(seq: 7, token: try DeviceToken.normalize(String(repeating: "ab", count: 32)).get(), payload: [],
                         apnsId: OutcomeDecisionTests.ours, attempts: 0, headers: nil, claimedAt: Date(timeIntervalSince1970: 1_000),
                         environment: 0, fellBack: fellBack)
    }

    func answer(_ status: Int, _ reason: APNsReason?) -> PushOutcome {
        .answered(status: status, apnsId: OutcomeDecisionTests.ours, reason: reason, timestamp: status == 410 ? 5 : nil)
    }

    @Test func badDeviceTokenIsRetriedAtOnceInTheOtherEnvironment() throws {
        let now = Date(timeIntervalSince1970: 2_000)
        guard case .retry(let o, let delay) = OutcomeDecision.decide(answer(400, "BadDeviceToken"), for: try claimed(), now: now, fallback: true) else {
            Issue.record("not a retry"); return
        }
        #expect(delay == 0 && o.status == .retry && o.retryAt == now && o.switchesEnvironment && o.reason == "BadDeviceToken" && o.httpStatus == 400)
    }

    @Test func withoutTheKeyOrOnceMovedItFails() throws {
        for (fallback, fellBack) in [(false, false), (true, true)] {
            guard case .failed(let o, _) = OutcomeDecision.decide(answer(400, "BadDeviceToken"), for: try claimed(fellBack: fellBack), fallback: fallback) else {
                Issue.record("not a failure: fallback \(fallback), moved \(fellBack)"); continue
            }
            #expect(!o.switchesEnvironment)
        }
    }

    @Test func noOtherAnswerMoves() throws {
        for (status, reason) in [(400, "DeviceTokenNotForTopic"), (410, "Unregistered"), (400, "BadTopic"), (403, "InvalidProviderToken"),
                                 (500, "InternalServerError"), (429, "TooManyRequests"), (200, nil)] as [(Int, APNsReason?)] {
            let verdict = OutcomeDecision.decide(answer(status, reason), for: try claimed(), fallback: true)
            #expect(OutcomeDecisionTests.outcome(verdict)?.switchesEnvironment != true, "\(status) \(reason?.rawValue ?? "")")
        }
    }
}
