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
