import Foundation
import GRDB
import HeraldCore

/// A push about to leave, as the ledger counts it: the device and which notification it is.
public struct LedgerPush: Sendable, Equatable {
    public var token: String
    public var apnsId: String
    public init(token: String, apnsId: String) { self.token = token; self.apnsId = apnsId }
}

/// The ledger's answer for one push.
public enum LedgerDecision: Sendable, Equatable {
    /// Its slot is recorded under every cap: send it.
    case admitted
    /// The device has had its pushes for a limit of the cap of `category`: the earliest time every
    /// limit of that cap has room again.
    case overCap(category: String, opensAt: Date)

    /// When the device has room again; nil: admitted.
    public var opensAt: Date? {
        if case .overCap(_, let at) = self { return at }
        return nil
    }
}

/// The per-device ledger: every push that a campaign of the state directory starts under a cap,
/// per cap category, topic and device token, so that a budget holds whichever campaigns send the
/// pushes. Both budgets herald has are caps over it: `throttle.frequency_cap` ("no more than 3
/// marketing pushes a day") and the silent-push budget (`throttle.silent_per_device_per_hour`,
/// `FrequencyCap.silentBudget`).
///
/// Crash safety: a push's slot is committed (synchronous=FULL) before the push leaves. A crash
/// between the commit and the send leaves a reserved slot that was never used, which only delays
/// that device; the opposite order could send a push the ledger never saw. A resend of the same
/// notification (same apns-id, after an unknown outcome or a retryable answer) reuses its slot: it
/// is one notification, and the device shows it at most once.
///
/// Concurrent campaigns: the checks and inserts of a whole batch run in one IMMEDIATE transaction,
/// which takes SQLite's write lock before reading, so two campaigns running at once cannot both
/// take a device's last slot.
extension SharedStore {
    /// Checks each push against `caps` in order and, when every cap has room, records it under
    /// each of them, all in one transaction. The first cap without room decides, and the push
    /// takes no slot under any cap.
    public func admit(_ pushes: [LedgerPush], topic: String, caps: [FrequencyCap], campaign: String,
                      now: Date = Date()) throws(StateError) -> [LedgerDecision] {
        guard !caps.isEmpty else { return pushes.map { _ in .admitted } }
        return try immediate { db in try Self.admit(db, pushes, topic: topic, caps: caps, campaign: campaign, now: now) }
    }

    /// Statements through `RawStatement` (SQLite's C API on GRDB's prepared statements): every
    /// push of a budgeted campaign runs them, and GRDB's argument boxing would cost more than
    /// SQLite's own work on them.
    private static func admit(_ db: Database, _ pushes: [LedgerPush], topic: String, caps: [FrequencyCap], campaign: String,
                              now: Date) throws -> [LedgerDecision] {
        let t = now.timeIntervalSince1970
        let recent = try RawStatement(cached: db, sql: """
            SELECT sent_at, apns_id FROM frequency_push WHERE category = ?1 AND topic = ?2 AND token = ?3 AND sent_at > ?4 ORDER BY sent_at
            """)
        let insert = try RawStatement(cached: db, sql: """
            INSERT INTO frequency_push (category, topic, token, apns_id, campaign, sent_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            """)
        defer { recent.clearBindings(); insert.clearBindings() }
        insert.bind(5, campaign)
        insert.bind(6, t)
        var out: [LedgerDecision] = []
        out.reserveCapacity(pushes.count)
        var times: [Double] = []
        for push in pushes {
            var decision = LedgerDecision.admitted
            // Caps the push takes a slot under (a resend already holds its slot): bit i for caps[i].
            var slots: UInt64 = 0
            for (i, cap) in caps.enumerated() {
                recent.bind(1, cap.category)
                recent.bind(2, cap.scope(topic))
                recent.bind(3, push.token)
                recent.bind(4, t - Double(cap.longest))
                times.removeAll(keepingCapacity: true)
                var resend = false
                try recent.forEachRow { row in
                    if row.string(1) == push.apnsId { resend = true }
                    times.append(row.double(0))
                }
                if resend { continue }
                if let opens = opensAt(cap, sentAt: times, now: t) {
                    decision = .overCap(category: cap.category, opensAt: Date(timeIntervalSince1970: opens))
                    break
                }
                slots |= 1 << UInt64(i)
            }
            if decision == .admitted {
                for (i, cap) in caps.enumerated() where slots & (1 << UInt64(i)) != 0 {
                    insert.bind(1, cap.category)
                    insert.bind(2, cap.scope(topic))
                    insert.bind(3, push.token)
                    insert.bind(4, push.apnsId)
                    try insert.execute()
                }
            }
            out.append(decision)
        }
        for cap in caps {
            // Entries older than the longest window any job gave the category count for no limit
            // any more; a job with a short cap never prunes what another still counts.
            try db.execute(sql: """
                INSERT INTO frequency_window (category, longest) VALUES (?1, ?2)
                ON CONFLICT (category) DO UPDATE SET longest = MAX(longest, ?2)
                """, arguments: [cap.category, Double(cap.longest)])
            let longest = try Double.fetchOne(db, sql: "SELECT longest FROM frequency_window WHERE category = ?", arguments: [cap.category])
                ?? Double(cap.longest)
            try db.execute(sql: "DELETE FROM frequency_push WHERE category = ? AND sent_at <= ?", arguments: [cap.category, t - longest])
        }
        return out
    }

    /// When a device with pushes at `sentAt` (ascending) has room under every limit of `cap`; nil: it has room now.
    private static func opensAt(_ cap: FrequencyCap, sentAt times: [Double], now t: Double) -> Double? {
        var opens: Double?
        for limit in cap.limits {
            let inWindow = times.filter { $0 > t - Double(limit.per) }
            if inWindow.count >= limit.max {
                // Room again once the oldest entries that fill this limit have left its window.
                let at = inWindow[inWindow.count - limit.max] + Double(limit.per)
                opens = max(opens ?? at, at)
            }
        }
        return opens
    }

    /// Pushes recorded under `cap` for a device within `window` seconds (default: the cap's
    /// longest) before `now` (herald preview, tests).
    public func pushCount(_ cap: FrequencyCap, topic: String, token: String, window: TimeInterval? = nil,
                          now: Date = Date()) throws(StateError) -> Int {
        try read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM frequency_push WHERE category = ? AND topic = ? AND token = ? AND sent_at > ?",
                             arguments: [cap.category, cap.scope(topic), token, now.timeIntervalSince1970 - (window ?? Double(cap.longest))]) ?? 0
        }
    }
}

extension FrequencyCap {
    /// The topic a push is counted under: its own, or none for a cap counted per token alone.
    func scope(_ topic: String) -> String { perTopic ? topic : "" }
}
