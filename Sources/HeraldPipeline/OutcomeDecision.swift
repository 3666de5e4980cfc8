import Foundation
import HeraldCore
import HeraldDelivery
import HeraldState

/// Turns APNs answers into recorded outcomes, following the one reason table in HeraldCore.
struct OutcomeDecision {
    struct Abort { var status: Int; var reason: String; var meaning: String }

    var outcomes: [AttemptOutcome] = []
    var released: [Int64] = []
    var sent = 0
    var refreshToken = false
    var abort: Abort?

    /// Backoff for a retryable answer: exponential from 1 s, capped at 5 minutes, with jitter so
    /// retries of one batch do not return as one burst.
    static func backoff(attempt: Int) -> TimeInterval {
        let base = min(300.0, pow(2.0, Double(max(0, attempt - 1))))
        return base * Double.random(in: 0.5...1.0)
    }

    static func decide(results: [PushResult], claimed: [ClaimedRecipient], maxAttempts: Int, now: Date = Date()) -> OutcomeDecision {
        var d = OutcomeDecision()
        d.outcomes.reserveCapacity(results.count)
        for result in results {
            let c = claimed[result.index]
            defer {   // Reports: the answer's apns-unique-id and this attempt's latency, whatever the outcome.
                if let last = d.outcomes.indices.last, d.outcomes[last].seq == c.seq {
                    d.outcomes[last].latencyMs = result.latencyMs
                    d.outcomes[last].apnsUniqueId = result.apnsUniqueId
                }
            }
            switch result.outcome {
            case .transportFailure(let why):
                // Outcome unknown: retried later with the same apns-id (and collapse id).
                d.outcomes.append(AttemptOutcome(seq: c.seq, status: .retry, reason: "connection_error: \(why)",
                                                 retryAt: now.addingTimeInterval(backoff(attempt: c.attempts))))
            case .answered(let status, let apnsId, let reason, let timestamp):
                if status == 200 {
                    d.sent += 1
                    d.outcomes.append(AttemptOutcome(seq: c.seq, status: .sent, httpStatus: 200, responseApnsId: apnsId))
                    continue
                }
                let reasonText = reason?.rawValue ?? "HTTP \(status)"
                switch APNsReasonTable.action(status: status, reason: reason) {
                case .permanent:
                    d.outcomes.append(AttemptOutcome(seq: c.seq, status: .failed, httpStatus: status, reason: reasonText,
                                                     responseApnsId: apnsId, invalidatedAt: status == 410 ? timestamp : nil))
                case .abortCampaign:
                    d.released.append(c.seq)
                    if d.abort == nil {
                        d.abort = Abort(status: status, reason: reasonText, meaning: reason?.entry?.meaning ?? "fatal")
                    }
                case .refreshTokenAndRetry, .retryAfterDelay, .retryOnNewConnection:
                    if reason?.entry?.action == .refreshTokenAndRetry { d.refreshToken = true }
                    d.outcomes.append(AttemptOutcome(seq: c.seq, status: .retry, httpStatus: status, reason: reasonText,
                                                     responseApnsId: apnsId, retryAt: now.addingTimeInterval(backoff(attempt: c.attempts))))
                }
            }
        }
        return d
    }
}
