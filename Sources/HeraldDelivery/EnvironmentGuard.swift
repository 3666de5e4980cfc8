import HeraldCore

/// Stops a campaign whose first answers are mostly BadDeviceToken or DeviceTokenNotForTopic: that
/// is a sandbox/production or topic mix-up (Apple: BadDeviceToken also means "the token is for the
/// other environment"), not an audience of dead tokens, and marking the whole audience failed
/// would be wrong. Apple also closes connections that produce many such errors: "APNs disconnects
/// a provider connection with too many error conditions … sooner with certain error conditions,
/// such as BadDeviceToken" (https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns).
///
/// A broadcast campaign's version of the mix-up is `ChannelNotRegistered`: channels are made per
/// environment ("the channel does not exist (deleted, or of the other environment)"), and a
/// campaign has a handful of them, so it trips on its first answers whatever their number: a job
/// whose channels mostly do not exist is a configuration error, and failing them for good would
/// leave nothing to send once it is fixed.
///
/// Until it has decided, the caller holds those answers back instead of recording them as
/// failures. Pure.
public struct EnvironmentGuard: Sendable {
    public enum Verdict: Sendable, Equatable { case undecided, passed, tripped }

    /// Answers that decide (Apple's "first" answers).
    public let sample: Int
    /// With fewer answers in the whole run, at least this many are needed to trip.
    public let minimumSample: Int
    public private(set) var verdict: Verdict = .undecided
    public private(set) var answered = 0
    public private(set) var mismatched = 0
    /// Recipients are broadcast channels.
    public let broadcast: Bool

    public init(sample: Int = 200, minimumSample: Int = 20, broadcast: Bool = false) {
        self.sample = max(1, sample); self.minimumSample = broadcast ? 1 : max(1, minimumSample); self.broadcast = broadcast
    }

    public static func isMismatch(_ reason: APNsReason?) -> Bool {
        reason == "BadDeviceToken" || reason == "DeviceTokenNotForTopic"
    }

    /// Whether `reason` is one this guard holds back until it decides.
    public func holds(_ reason: APNsReason?) -> Bool { broadcast ? reason == "ChannelNotRegistered" : Self.isMismatch(reason) }

    /// Counts one APNs answer (not a lost connection); returns the verdict once decided.
    public mutating func record(status: Int, reason: APNsReason?) -> Verdict {
        guard verdict == .undecided else { return verdict }
        answered += 1
        if status == 400, holds(reason) { mismatched += 1 }
        if mismatched * 2 > sample { verdict = .tripped }
        else if answered >= sample { verdict = mismatched * 2 > answered ? .tripped : .passed }
        return verdict
    }

    /// The run has nothing more to send: decide on what was seen.
    public mutating func finish() -> Verdict {
        guard verdict == .undecided else { return verdict }
        verdict = answered >= minimumSample && mismatched * 2 > answered ? .tripped : .passed
        return verdict
    }

    public var message: String {
        if broadcast {
            return "\(mismatched) of the first \(answered) channels answered ChannelNotRegistered: channels of the other environment (sandbox/production), "
                + "or deleted? Check apns.endpoint against where the channels were created (herald channels list), and the job's channels"
        }
        return "\(mismatched) of the first \(answered) answers were BadDeviceToken/DeviceTokenNotForTopic: sandbox/production or topic mismatch? "
            + "Check apns.endpoint against the app build the tokens come from, and apns.topic"
    }
}
