import HeraldCore

/// What one APNs answer means to herald: the one place that decides it, from the reason table
/// in HeraldCore (Apple's reasons and statuses:
/// https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns).
///
/// The connection worker acts on it at once, on the connection that got it (stop feeding, sign a
/// new provider token, move to a new connection); the send loop records it (OutcomeDecision) and
/// feeds the circuit breaker, adaptive concurrency and the environment guard from it.
public enum AnswerMeaning: Sendable, Equatable {
    /// 200: APNs accepted the notification.
    case delivered
    /// Final for this recipient, never resent (BadDeviceToken, Unregistered, PayloadTooLarge, …,
    /// and any reason Apple has not documented).
    case rejected
    /// Our configuration is wrong (key, topic, certificate): every further request would get the
    /// same answer, so the campaign stops and the recipient goes back to pending.
    case abortCampaign
    /// ExpiredProviderToken: sign a new token, move to a new connection, resend at once.
    case refreshTokenAndRetry
    /// Resend after a backoff. `newConnection`: Apple's answer says the connection is the
    /// problem (Shutdown, 502/503/504, …). `tooManyRequests`: this token is sent to too often; it
    /// waits longer, the campaign does not.
    case retryLater(newConnection: Bool, tooManyRequests: Bool)
    /// No answer (connection lost, reset, timeout, never sent): the outcome is unknown, so the
    /// request is resent with the same apns-id.
    case unknown
    /// The server's certificate did not verify (`TransportFailure.Kind.tlsTrust`): nothing reached
    /// APNs and nothing will as configured (`apns.ca_file`, the system's trust store), so the
    /// campaign stops and the recipient goes back to pending, uncounted.
    case untrusted

    public init(_ outcome: PushOutcome) {
        switch outcome {
        case .transportFailure(let failure):
            self = failure.kind == .tlsTrust ? .untrusted : .unknown
        case .answered(200, _, _, _):
            self = .delivered
        case .answered(let status, _, let reason, _):
            let action = APNsReasonTable.action(status: status, reason: reason)
            switch action {
            case .permanent: self = .rejected
            case .abortCampaign: self = .abortCampaign
            case .refreshTokenAndRetry: self = .refreshTokenAndRetry
            case .retryAfterDelay, .retryOnNewConnection:
                self = .retryLater(newConnection: action == .retryOnNewConnection, tooManyRequests: reason == "TooManyRequests")
            }
        }
    }
}

extension AnswerMeaning {
    /// A sign that APNs is failing (a 5xx or a lost connection): what the circuit breaker counts.
    public static func isServerFailure(_ outcome: PushOutcome) -> Bool {
        switch outcome {
        case .transportFailure: return true
        case .answered(let status, _, _, _): return status >= 500
        }
    }

    /// A sign to send less at once (those, and 429): what adaptive concurrency counts. Slow answers
    /// are not pushback.
    public static func isPushback(_ outcome: PushOutcome) -> Bool {
        switch outcome {
        case .transportFailure: return true
        case .answered(let status, _, _, _): return status == 429 || status >= 500
        }
    }
}

extension PushOutcome {
    /// What this answer means (`AnswerMeaning`).
    public var meaning: AnswerMeaning { AnswerMeaning(self) }
}
