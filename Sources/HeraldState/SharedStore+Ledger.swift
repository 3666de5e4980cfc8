import Foundation
import GRDB

/// A background (silent) push about to leave: who it goes to and which notification it is.
public struct SilentPush: Sendable, Equatable {
    public var token: String
    public var apnsId: String
    public init(token: String, apnsId: String) { self.token = token; self.apnsId = apnsId }
}

/// The silent-push budget's answer for one push.
public enum SilentBudgetDecision: Sendable, Equatable {
    /// Recorded in the ledger: send it.
    case admitted
    /// The device already had its budget within the window: the earliest time it has room again.
    case overBudget(opensAt: Date)

    /// When the device has room again; nil: admitted.
    public var opensAt: Date? {
        if case .overBudget(let at) = self { return at }
        return nil
    }
}

/// The silent-push ledger: every background push that any campaign of the state directory sends,
/// per device token, so that `throttle.silent_per_device_per_hour` holds across campaigns
/// (Apple: "don't try to send more than two or three per hour", https://developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app).
///
/// Crash safety: an entry is committed (synchronous=FULL) before the push leaves. A crash between
/// the commit and the send leaves a reserved slot that was never used, which only delays that
/// device; the opposite order could send a push the ledger never saw. A resend of the same
/// notification (same apns-id, after an unknown outcome or a retryable answer) within the window
/// reuses its entry: it is one notification, and the device shows it at most once.
///
/// Concurrent campaigns: the check and the insert run in one IMMEDIATE transaction, which takes
/// SQLite's write lock before reading, so two processes cannot both see room for the last slot.
extension SharedStore {
    /// Apple's "per hour".
    public static let silentWindow: TimeInterval = 3600

    /// Checks each push against `limit` pushes per device within `window` seconds before `now`
    /// and records the admitted ones, all in one transaction. `limit` 0 means no budget: every
    /// push is admitted and still recorded, so campaigns with a budget count it.
    public func admitSilent(_ pushes: [SilentPush], campaign: String, limit: Int, window: TimeInterval = SharedStore.silentWindow,
                            now: Date = Date()) throws(StateError) -> [SilentBudgetDecision] {
        try immediate { db in try Self.admit(db, pushes, campaign: campaign, limit: limit, window: window, now: now) }
    }

    private static func admit(_ db: Database, _ pushes: [SilentPush], campaign: String, limit: Int, window: TimeInterval,
                              now: Date) throws -> [SilentBudgetDecision] {
        let t = now.timeIntervalSince1970
        let since = t - window
        let recent = try db.cachedStatement(sql: "SELECT sent_at, apns_id FROM silent_push WHERE token = ? AND sent_at > ? ORDER BY sent_at")
        let insert = try db.cachedStatement(sql: "INSERT INTO silent_push (token, apns_id, campaign, sent_at) VALUES (?, ?, ?, ?)")
        var out: [SilentBudgetDecision] = []
        out.reserveCapacity(pushes.count)
        for push in pushes {
            let rows = try Row.fetchAll(recent, arguments: [push.token, since])
            if rows.contains(where: { ($0["apns_id"] as String) == push.apnsId }) {
                out.append(.admitted)
                continue
            }
            if limit > 0, rows.count >= limit {
                // Room again once the oldest entries that fill the budget have left the window.
                let opens: Double = rows[rows.count - limit]["sent_at"]
                out.append(.overBudget(opensAt: Date(timeIntervalSince1970: opens + window)))
                continue
            }
            try insert.execute(arguments: [push.token, push.apnsId, campaign, t])
            out.append(.admitted)
        }
        // Entries older than any window are never read again; keep the ledger small.
        try db.execute(sql: "DELETE FROM silent_push WHERE sent_at <= ?", arguments: [t - max(window, silentWindow)])
        return out
    }

    /// Background pushes recorded for `token` within `window` seconds before `now` (herald status, tests).
    public func silentPushCount(token: String, window: TimeInterval = SharedStore.silentWindow, now: Date = Date()) throws(StateError) -> Int {
        try read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM silent_push WHERE token = ? AND sent_at > ?",
                             arguments: [token, now.timeIntervalSince1970 - window]) ?? 0
        }
    }
}
