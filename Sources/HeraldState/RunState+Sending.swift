import Foundation
import GRDB
import HeraldCore

/// A recipient taken for sending: already committed as `inflight` with its attempt counted.
public struct ClaimedRecipient: Sendable {
    /// The recipient's row: outcomes are recorded against it.
    public let seq: Int64
    public let token: DeviceToken
    public let payload: [UInt8]
    public let apnsId: String
    public let attempts: Int
    /// Set when the job templates headers per recipient.
    public let headers: RecipientHeaders?
}

/// The answer for one recipient, as the sender decided it.
public struct AttemptOutcome: Sendable {
    /// The recipient's row (`ClaimedRecipient.seq`).
    public var seq: Int64
    public var status: StoredStatus
    public var httpStatus: Int?
    public var reason: String
    public var responseApnsId: String?
    /// For `retry`: not before this time.
    public var retryAt: Date?
    /// A 410's timestamp (ms since the epoch): when APNs learned the token was dead.
    public var invalidatedAt: Int64?

    public init(seq: Int64, status: StoredStatus, httpStatus: Int? = nil, reason: String = "",
                responseApnsId: String? = nil, retryAt: Date? = nil, invalidatedAt: Int64? = nil) {
        self.seq = seq; self.status = status; self.httpStatus = httpStatus; self.reason = reason
        self.responseApnsId = responseApnsId; self.retryAt = retryAt; self.invalidatedAt = invalidatedAt
    }
}

extension RunState {
    /// Takes up to `limit` sendable recipients in audience order and commits them as `inflight`
    /// (attempt counted) before returning: what leaves the process is always on disk first.
    /// `inflight` rows left by a crashed run are taken again (outcome unknown: resent with the same apns-id).
    public func claim(limit: Int, maxAttempts: Int = Int.max, now: Date = Date()) throws(StateError) -> [ClaimedRecipient] {
        try write { db in try claim(db, limit: limit, maxAttempts: maxAttempts, now: now) }
    }

    /// `includeInflight: false` is for a sender that has its own inflight recipients on the wire.
    func claim(_ db: Database, limit: Int, maxAttempts: Int, now: Date, includeInflight: Bool = true) throws -> [ClaimedRecipient] {
        do {
            // One indexed range scan per status (recipient_status is (status, seq)): an OR across
            // statuses would scan every sent row on every claim, quadratic in the audience.
            var rows: [Row] = []
            for (status, extra) in [("inflight", ""), ("pending", ""), ("retry", " AND r.retry_at <= ?")] where rows.count < limit && (includeInflight || status != "inflight") {
                var arguments: StatementArguments = [id, status, maxAttempts]
                if !extra.isEmpty { _ = arguments.append(contentsOf: [now.timeIntervalSince1970]) }
                _ = arguments.append(contentsOf: [limit - rows.count])
                rows += try Row.fetchAll(db, sql: """
                    SELECT r.seq, r.token, COALESCE(a.payload, r.payload) AS payload, r.apns_id, r.attempts,
                           a.priority, a.collapse_id, a.expiration
                    FROM recipient r LEFT JOIN audience_row a ON a.id = r.row
                    WHERE r.run = ? AND r.status = ? AND r.run_attempts < ?\(extra) ORDER BY r.seq LIMIT ?
                    """, arguments: arguments)
            }
            let stamp = Timestamp.iso(now)
            let update = try db.cachedStatement(sql: """
                UPDATE recipient SET status = 'inflight', attempts = attempts + 1, run_attempts = run_attempts + 1,
                    first_attempt_at = COALESCE(first_attempt_at, ?), last_attempt_at = ? WHERE seq = ?
                """)
            var out: [ClaimedRecipient] = []
            out.reserveCapacity(rows.count)
            for r in rows {
                try update.execute(arguments: [stamp, stamp, r["seq"] as Int64])
                let payload: Data = r["payload"]
                var headers: RecipientHeaders?
                if let priority = r["priority"] as Int? {
                    let expiration = (r["expiration"] as String?).flatMap { ExpirationSpec(storageText: $0) } ?? .unset
                    headers = RecipientHeaders(priority: priority, collapseId: r["collapse_id"], expiration: expiration)
                }
                out.append(ClaimedRecipient(seq: r["seq"], token: DeviceToken(trustedCanonical: r["token"]), payload: Array(payload),
                                            apnsId: r["apns_id"], attempts: (r["attempts"] as Int) + 1, headers: headers))
            }
            return out
        }
    }

    /// The earliest time a `retry` recipient with attempts left in this run may go again, if any waits.
    public func nextRetryTime(maxAttempts: Int) throws(StateError) -> Date? {
        try read { db in
            try Double.fetchOne(db, sql: "SELECT MIN(retry_at) FROM recipient WHERE run = ? AND status = 'retry' AND run_attempts < ?",
                                arguments: [id, maxAttempts]).map { Date(timeIntervalSince1970: $0) }
        }
    }

    /// Each invocation gets `retry.max_attempts` fresh tries per recipient; exhausted ones wait for the next run.
    public func resetRunAttempts() throws(StateError) {
        try write { db in try db.execute(sql: "UPDATE recipient SET run_attempts = 0 WHERE run = ? AND run_attempts != 0", arguments: [id]) }
    }

    /// Commits a batch of answers in one transaction.
    public func record(_ outcomes: [AttemptOutcome]) throws(StateError) {
        try write { db in try record(db, outcomes) }
    }

    func record(_ db: Database, _ outcomes: [AttemptOutcome]) throws {
        do {
            let update = try db.cachedStatement(sql: """
                UPDATE recipient SET status = ?, http_status = ?, reason = ?, response_apns_id = COALESCE(?, response_apns_id),
                    retry_at = ?, invalidated_at = COALESCE(?, invalidated_at) WHERE seq = ?
                """)
            for o in outcomes {
                try update.execute(arguments: [o.status.rawValue, o.httpStatus, o.reason, o.responseApnsId,
                                               o.retryAt?.timeIntervalSince1970, o.invalidatedAt, o.seq])
            }
        }
    }

    /// Puts recipients back to `pending` without counting the attempt against them: used when the
    /// campaign aborts because of our configuration (bad key, topic), not their token.
    public func release(_ recipients: [Int64]) throws(StateError) {
        try write { db in
            let update = try db.cachedStatement(sql: "UPDATE recipient SET status = 'pending', attempts = MAX(attempts - 1, 0), run_attempts = MAX(run_attempts - 1, 0) WHERE seq = ?")
            for seq in recipients { try update.execute(arguments: [seq]) }
        }
    }

    /// Retryable recipients that have been trying longer than `giveUpAfter` seconds become failed
    /// (`gave_up`), so one bad token cannot keep a campaign open forever.
    public func giveUp(olderThan seconds: Int, now: Date = Date()) throws(StateError) -> Int {
        try write { db in
            let cutoff = Timestamp.iso(now.addingTimeInterval(-Double(seconds)))
            try db.execute(sql: """
                UPDATE recipient SET status = 'failed', reason = 'gave_up'
                WHERE run = ? AND status IN ('retry', 'inflight', 'pending') AND first_attempt_at IS NOT NULL AND first_attempt_at < ?
                """, arguments: [id, cutoff])
            return db.changesCount
        }
    }

    /// Recipients by stored status.
    public func statusCounts() throws(StateError) -> [StoredStatus: Int] {
        try read { db in
            var out: [StoredStatus: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT status, COUNT(*) AS n FROM recipient WHERE run = ? GROUP BY status", arguments: [id]) {
                if let s = StoredStatus(rawValue: row["status"]) { out[s] = row["n"] }
            }
            return out
        }
    }

    /// Failed and pending recipients by reason (the summary's `by_reason`).
    public func reasonCounts() throws(StateError) -> [String: Int] {
        try read { db in
            var out: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT reason, COUNT(*) AS n FROM recipient WHERE run = ? AND reason != '' GROUP BY reason", arguments: [id]) {
                out[row["reason"]] = row["n"]
            }
            return out
        }
    }

    public func invalidCounts() throws(StateError) -> [String: Int] {
        try read { db in
            var out: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT reason, COUNT(*) AS n FROM invalid_row WHERE run = ? GROUP BY reason", arguments: [id]) {
                out[row["reason"]] = row["n"]
            }
            return out
        }
    }
}
