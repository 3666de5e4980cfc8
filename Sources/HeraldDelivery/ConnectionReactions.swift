import Foundation
import HeraldCore

/// What a connection's thread (`Nghttp2Worker`, device pushes and broadcasts alike) does at once
/// about an answer or a failed connect: stop the pool's connections on an answer that refuses its
/// credentials, stop starting one topic's requests on an answer that refuses that topic (other
/// apps sharing the pool carry on), re-sign an expired provider token, move new
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

    /// An answer arrived. `topic`: the request's apns-topic; `jwt`: the token the request carried;
    /// `onCurrent`: it came on the connection new requests go to.
    mutating func answered(_ outcome: PushOutcome, topic: String, jwt: String?, onCurrent: Bool, now: UInt64, shared: EngineShared) {
        connectFailures = 0
        switch outcome.meaning {
        case .abortCampaign where outcome.abortScope == .topic:
            // Every further request for this topic would get the same answer, not those for the
            // pool's other topics: hold the topic's jobs before the runner even hears of it.
            shared.feed.withLock { $0.block(topic: topic) }
        case .abortCampaign:
            // Every further request on these credentials would get the same answer: stop the pool
            // before the runner even hears of it.
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
