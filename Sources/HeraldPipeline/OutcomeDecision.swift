import Foundation
import HeraldCore
import HeraldDelivery
import HeraldState

/// Turns what one APNs answer means (`AnswerMeaning`, decided once in HeraldDelivery) into what
/// the state file records:
/// - 200: sent.
/// - Permanent reasons (BadDeviceToken, Unregistered, PayloadTooLarge, … and any reason Apple has
///   not documented, recorded verbatim): failed, never retried; a 410 keeps its timestamp.
/// - TooManyRequests: that token waits (a longer backoff), the campaign does not.
/// - 5xx, Shutdown, IdleTimeout, lost connections: retried with exponential backoff and jitter
///   (the connection that got them is replaced by the sender where Apple says so).
/// - ExpiredProviderToken: retried at once; the sender has re-signed and reconnected.
/// - Abort reasons (InvalidProviderToken, BadTopic, …): the recipient goes back to pending, the
///   campaign (or, with several apps, the app) stops.
/// - With `apns.environment_fallback`, BadDeviceToken from one environment: retried at once in the
///   other, once (`switchesEnvironment`). It cannot notify anyone twice: BadDeviceToken is a
///   refusal, nothing was delivered ("The specified device token is invalid", Apple's table,
///   https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns),
///   and a token belongs to the one environment its app build registered with. Any other answer
///   is never tried elsewhere.
enum OutcomeDecision {
    struct Abort: Equatable { var status: Int; var reason: String; var meaning: String }

    enum Verdict {
        case sent(AttemptOutcome)
        case failed(AttemptOutcome, reason: APNsReason?)
        /// `delay`: seconds until the recipient may go again.
        case retry(AttemptOutcome, delay: TimeInterval)
        case abort(Abort)

        /// For the reports: this attempt's latency and the answer's apns-unique-id, whatever the outcome.
        func annotated(with r: PushResult) -> Verdict {
            changingOutcome { o in
                if case .answered = r.outcome { o.latencyMs = r.latencyMs }
                o.apnsUniqueId = r.apnsUniqueId
            }
        }

        /// The same verdict with `change` applied to the outcome it records (an abort records none).
        func changingOutcome(_ change: (inout AttemptOutcome) -> Void) -> Verdict {
            func changed(_ o: AttemptOutcome) -> AttemptOutcome { var o = o; change(&o); return o }
            switch self {
            case .sent(let o): return .sent(changed(o))
            case .failed(let o, let reason): return .failed(changed(o), reason: reason)
            case .retry(let o, let delay): return .retry(changed(o), delay: delay)
            case .abort: return self
            }
        }
    }

    /// The verdict for one answer; its outcome carries the claim's time, the attempt's.
    /// `fallback`: `apns.environment_fallback`.
    static func decide(_ outcome: PushOutcome, for c: ClaimedRecipient, now: Date = Date(), fallback: Bool = false,
                       backoff: RetryBackoff = .recipient, tooManyRequests: RetryBackoff = .tooManyRequests) -> Verdict {
        verdict(outcome, for: c, now: now, fallback: fallback, backoff: backoff, tooManyRequests: tooManyRequests)
            .changingOutcome { $0.attemptedAt = c.claimedAt }
    }

    /// Whether the answer moves the recipient to the other environment (`apns.environment_fallback`).
    /// `fellBack`: the recipient was already moved once.
    static func fallsBack(_ reason: APNsReason?, status: Int, fellBack: Bool, fallback: Bool) -> Bool {
        fallback && !fellBack && status == 400 && reason == "BadDeviceToken"
    }

    private static func verdict(_ outcome: PushOutcome, for c: ClaimedRecipient, now: Date, fallback: Bool,
                                backoff: RetryBackoff, tooManyRequests: RetryBackoff) -> Verdict {
        switch outcome {
        case .transportFailure(let why):
            // Outcome unknown: retried later with the same apns-id (and collapse id).
            let delay = backoff.delay(attempt: c.attempts)
            return .retry(AttemptOutcome(seq: c.seq, status: .retry, reason: "connection_error: \(why)", retryAt: now.addingTimeInterval(delay)),
                          delay: delay)
        case .answered(let status, let answeredId, let reason, let timestamp):
            // APNs echoes the apns-id we sent: the state file keeps the answer's only when it
            // differs (the reports show the answer's, else ours), saving a string per row.
            let apnsId = answeredId == c.apnsId ? nil : answeredId
            let reasonText = reason?.rawValue ?? "HTTP \(status)"
            switch outcome.meaning {
            case .delivered:
                return .sent(AttemptOutcome(seq: c.seq, status: .sent, httpStatus: 200, responseApnsId: apnsId))
            case .rejected where fallsBack(reason, status: status, fellBack: c.fellBack, fallback: fallback):
                var o = AttemptOutcome(seq: c.seq, status: .retry, httpStatus: status, reason: reasonText, responseApnsId: apnsId, retryAt: now)
                o.switchesEnvironment = true
                return .retry(o, delay: 0)
            case .rejected, .unknown, .untrusted:  // `.unknown` and `.untrusted` are meanings of no answer, never of one
                return .failed(AttemptOutcome(seq: c.seq, status: .failed, httpStatus: status, reason: reasonText,
                                              responseApnsId: apnsId, invalidatedAt: status == 410 ? timestamp : nil), reason: reason)
            case .abortCampaign:
                return .abort(Abort(status: status, reason: reasonText, meaning: reason?.entry?.meaning ?? "fatal"))
            case .refreshTokenAndRetry:
                return .retry(AttemptOutcome(seq: c.seq, status: .retry, httpStatus: status, reason: reasonText, responseApnsId: apnsId,
                                             retryAt: now), delay: 0)
            case .retryLater(_, let tooMany):
                let delay = (tooMany ? tooManyRequests : backoff).delay(attempt: c.attempts)
                return .retry(AttemptOutcome(seq: c.seq, status: .retry, httpStatus: status, reason: reasonText, responseApnsId: apnsId,
                                             retryAt: now.addingTimeInterval(delay)), delay: delay)
            }
        }
    }
}
