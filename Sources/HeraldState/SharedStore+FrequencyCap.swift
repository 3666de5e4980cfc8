import Foundation
import GRDB
import HeraldCore

/// A frequency cap's answer for one push.
public enum FrequencyCapDecision: Sendable, Equatable {
    /// Its slot is recorded: send it.
    case admitted
    /// The device has had its pushes for a limit: the earliest time every limit has room again.
    case overCap(opensAt: Date)

    /// When the device has room again; nil: admitted.
    public var opensAt: Date? {
        if case .overCap(let at) = self { return at }
        return nil
    }
}

/// The frequency-cap ledger (`throttle.frequency_cap`): every push a campaign of a category
/// starts, per topic and device token, across every campaign of the state directory, so that "no
/// more than 3 marketing pushes a day" holds whichever campaigns send them.
///
/// Crash safety, as for the silent-push ledger: a push's slot is committed (synchronous=FULL)
/// before the push leaves, so a crash may leave an unused slot, never an unrecorded push. A resend
/// of the same notification (same apns-id) reuses its slot: it is one notification.
///
/// Concurrent campaigns: the checks and inserts of a whole batch run in one IMMEDIATE
/// transaction, which takes SQLite's write lock before reading, so two campaigns running at once
/// cannot both take a device's last slot.
extension SharedStore {
    public func admitCapped(_ pushes: [SilentPush], topic: String, cap: FrequencyCap, campaign: String,
                            now: Date = Date()) throws(StateError) -> [FrequencyCapDecision] {
        try immediate { db in try Self.admitCapped(db, pushes, topic: topic, cap: cap, campaign: campaign, now: now) }
    }

    private static func admitCapped(_ db: Database, _ pushes: [SilentPush], topic: String, cap: FrequencyCap, campaign: String,
                                    now: Date) throws -> [FrequencyCapDecision] {
        let t = now.timeIntervalSince1970
        try db.execute(sql: """
            INSERT INTO frequency_window (category, longest) VALUES (?1, ?2)
            ON CONFLICT (category) DO UPDATE SET longest = MAX(longest, ?2)
            """, arguments: [cap.category, Double(cap.longest)])
        let longest = try Double.fetchOne(db, sql: "SELECT longest FROM frequency_window WHERE category = ?", arguments: [cap.category]) ?? Double(cap.longest)
        let recent = try db.cachedStatement(sql: """
            SELECT sent_at, apns_id FROM frequency_push WHERE category = ? AND topic = ? AND token = ? AND sent_at > ? ORDER BY sent_at
            """)
        let insert = try db.cachedStatement(sql: """
            INSERT INTO frequency_push (category, topic, token, apns_id, campaign, sent_at) VALUES (?, ?, ?, ?, ?, ?)
            """)
        var out: [FrequencyCapDecision] = []
        out.reserveCapacity(pushes.count)
        for push in pushes {
            let rows = try Row.fetchAll(recent, arguments: [cap.category, topic, push.token, t - Double(cap.longest)])
            if rows.contains(where: { ($0["apns_id"] as String) == push.apnsId }) {
                out.append(.admitted)
                continue
            }
            let times: [Double] = rows.map { $0["sent_at"] }
            var opens: Double?
            for limit in cap.limits {
                let inWindow = times.filter { $0 > t - Double(limit.per) }
                if inWindow.count >= limit.max {
                    // Room again once the oldest entries that fill this limit have left its window.
                    let at = inWindow[inWindow.count - limit.max] + Double(limit.per)
                    opens = max(opens ?? at, at)
                }
            }
            if let opens {
                out.append(.overCap(opensAt: Date(timeIntervalSince1970: opens)))
                continue
            }
            try insert.execute(arguments: [cap.category, topic, push.token, push.apnsId, campaign, t])
            out.append(.admitted)
        }
        // Entries older than the category's longest window count for no limit any more.
        try db.execute(sql: "DELETE FROM frequency_push WHERE category = ? AND sent_at <= ?", arguments: [cap.category, t - longest])
        return out
    }

    /// Pushes recorded for a device within `window` seconds before `now` (herald preview, tests).
    public func cappedPushCount(category: String, topic: String, token: String, window: TimeInterval, now: Date = Date()) throws(StateError) -> Int {
        try read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM frequency_push WHERE category = ? AND topic = ? AND token = ? AND sent_at > ?",
                             arguments: [category, topic, token, now.timeIntervalSince1970 - window]) ?? 0
        }
    }
}
