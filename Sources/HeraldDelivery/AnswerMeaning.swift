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

/// Whom an abort-class answer (`AnswerMeaning.abortCampaign`) is about, which decides what it
/// stops. "APNs doesn't support authentication tokens from multiple developer accounts over a
/// single connection" (https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns),
/// and a certificate covers one app, so herald keeps one pool per endpoint and credentials,
/// shared by the apps of one team (`RoutingSender`).
public enum AbortScope: Sendable, Equatable {
    /// The connection's identity is refused (key, token, certificate, environment): every request
    /// on the pool would get the same answer, so the pool starts no more.
    case credentials
    /// One app's topic is refused (not its team's, wrong suffix, a capability it lacks): the other
    /// apps sharing the pool carry on; the pool starts no more requests for that topic.
    case topic
}

extension AnswerMeaning {
    /// What an abort-class answer's reason is about; nil for any other answer. The reasons are
    /// Apple's (https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns).
    /// An abort reason not named here stops its pool, the safe side.
    public static func abortScope(_ reason: APNsReason?) -> AbortScope? {
        guard let reason, reason.action == .abortCampaign else { return nil }
        switch reason.rawValue {
        // The request's apns-topic: invalid, missing, or one this connection may not push to; for
        // a broadcast, a capability the app lacks or a bundle id its key or certificate does not cover.
        case "BadTopic", "MissingTopic", "TopicDisallowed", "FeatureNotEnabled", "TopicMismatch":
            return .topic
        // The connection's identity: the certificate invalid or of the other environment, the
        // provider token invalid or missing, its key of the other environment.
        case "BadCertificate", "BadCertificateEnvironment", "InvalidProviderToken", "MissingProviderToken",
             "BadEnvironmentKeyIdInToken", "BadEnvironmentKeyInToken":
            return .credentials
        default:
            return .credentials
        }
    }
}

extension PushOutcome {
    /// What this answer means (`AnswerMeaning`).
    public var meaning: AnswerMeaning { AnswerMeaning(self) }

    /// For an abort-class answer, whom it is about (`AnswerMeaning.abortScope`); nil otherwise.
    public var abortScope: AbortScope? {
        guard case .answered(_, _, let reason, _) = self, meaning == .abortCampaign else { return nil }
        return AnswerMeaning.abortScope(reason)
    }
}
