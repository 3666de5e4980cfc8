import Foundation
import HeraldCore

/// What a connection's thread (`Nghttp2Worker`, device pushes and broadcasts alike) does at once
/// about an answer or a failed connect: stop every connection on
/// an answer that means the configuration is wrong, re-sign an expired provider token, move new
/// requests to a fresh connection when Apple's answer says so (at most one renewal per
/// `renewalInterval`), and back off after a failed connect. What the answer means is
/// `AnswerMeaning`'s to decide; this only acts on it.
struct ConnectionReactions {
    /// Set when new requests should go to a fresh connection; the worker retires its current one.
    private(set) var renewRequested = false
    /// No new connection is tried before this uptime (ns).
    private(set) var reconnectAt: UInt64 = 0
    private var lastRenewal: UInt64 = 0
    private var connectFailures = 0

    /// At most one "retry on a new connection" renewal per this many nanoseconds: a 503 storm
    /// must not turn into a handshake storm.
    static let renewalInterval: UInt64 = 2_000_000_000

    /// An answer arrived. `jwt`: the token the request carried; `onCurrent`: it came on the
    /// connection new requests go to.
    mutating func answered(_ outcome: PushOutcome, jwt: String?, onCurrent: Bool, now: UInt64, shared: EngineShared) {
        connectFailures = 0
        switch outcome.meaning {
        case .abortCampaign:
            // Every further request would get the same answer: stop before the runner even hears of it.
            shared.halted.store(true, ordering: .relaxed)
        case .refreshTokenAndRetry:
            // Re-sign once (whoever sees it first) and move to a fresh connection.
            if let jwt { shared.token?.invalidate(rejected: jwt) }
            if onCurrent { renewRequested = true }
        case .retryLater(newConnection: true, _) where onCurrent && now &- lastRenewal >= Self.renewalInterval:
            renewRequested = true
        default:
            break
        }
    }

    /// A connect failed: the next one waits, longer after each failure in a row.
    mutating func connectFailed(now: UInt64) {
        connectFailures += 1
        let delay = RetryBackoff.reconnect.delay(attempt: connectFailures)
        reconnectAt = max(reconnectAt, now + UInt64(delay * 1e9))
    }

    /// The worker moved new requests to a fresh connection.
    mutating func renewed(now: UInt64) {
        renewRequested = false
        lastRenewal = now
    }

    /// Whether a connection that adopted `used` at `adoptedAt` may not switch to `jwt`: "APNs report
    /// an error if you use a new token more than once every 20 minutes on the same connection"
    /// (https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns).
    static func tokenNeedsFreshConnection(used: String?, adoptedAt: Date?, next jwt: String?) -> Bool {
        guard let used, let jwt, used != jwt, let adoptedAt else { return false }
        return Date().timeIntervalSince(adoptedAt) < ProviderToken.minimumReuse
    }
}
