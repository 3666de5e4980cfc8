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
    /// The answer's `apns-unique-id` (APNs sends it in development only), for delivery-log lookups.
    public var apnsUniqueId: String?
    /// Request to answer, this attempt; nil when no request completed.
    public var latencyMs: Int?

    public init(seq: Int64, status: StoredStatus, httpStatus: Int? = nil, reason: String = "",
                responseApnsId: String? = nil, retryAt: Date? = nil, invalidatedAt: Int64? = nil,
                apnsUniqueId: String? = nil, latencyMs: Int? = nil) {
        self.seq = seq; self.status = status; self.httpStatus = httpStatus; self.reason = reason
        self.responseApnsId = responseApnsId; self.retryAt = retryAt; self.invalidatedAt = invalidatedAt
        self.apnsUniqueId = apnsUniqueId; self.latencyMs = latencyMs
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
            // Rows are read and marked through the C API (RawStatement): GRDB's Row decoding by
            // column name cost more than the UPDATE itself, once per recipient per attempt.
            let stamp = Timestamp.iso(now)
            let update = try RawStatement(db, sql: """
                UPDATE recipient SET status = 'inflight', attempts = attempts + 1, run_attempts = run_attempts + 1,
                    first_attempt_at = COALESCE(first_attempt_at, ?1), last_attempt_at = ?1 WHERE seq = ?2
                """)
            update.bind(1, stamp)
            var out: [ClaimedRecipient] = []
            out.reserveCapacity(limit)
            for (status, extra) in [("inflight", ""), ("pending", ""), ("retry", " AND r.retry_at <= ?5")]
                where out.count < limit && (includeInflight || status != "inflight") {
                let select = try RawStatement(db, sql: """
                    SELECT r.seq, r.token, COALESCE(a.payload, r.payload), r.apns_id, r.attempts, a.priority, a.collapse_id, a.expiration
                    FROM recipient r LEFT JOIN audience_row a ON a.id = r.row
                    WHERE r.run = ?1 AND r.status = ?2 AND r.run_attempts < ?3\(extra) ORDER BY r.seq LIMIT ?4
                    """)
                select.bind(1, id)
                select.bind(2, status)
                select.bind(3, maxAttempts)
                select.bind(4, limit - out.count)
                if !extra.isEmpty { select.bind(5, now.timeIntervalSince1970 as Double?) }
                try select.forEachRow { r in
                    var headers: RecipientHeaders?
                    if !r.isNull(5) {
                        let expiration = r.optionalString(7).flatMap { ExpirationSpec(storageText: $0) } ?? .unset
                        headers = RecipientHeaders(priority: r.int(5), collapseId: r.optionalString(6), expiration: expiration)
                    }
                    out.append(ClaimedRecipient(seq: r.int64(0), token: DeviceToken(trustedCanonical: r.string(1)), payload: r.byteArray(2),
                                                apnsId: r.string(3), attempts: r.int(4) + 1, headers: headers))
                }
            }
            // Marked after reading: the SELECT's index is the one the UPDATE changes.
            for c in out {
                update.bind(2, c.seq)
                try update.execute()
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
            let update = try RawStatement(db, sql: """
                UPDATE recipient SET status = ?, http_status = ?, reason = ?, response_apns_id = COALESCE(?, response_apns_id),
                    retry_at = ?, invalidated_at = COALESCE(?, invalidated_at), apns_unique_id = COALESCE(?, apns_unique_id),
                    latency_ms = COALESCE(?, latency_ms) WHERE seq = ?
                """)
            for o in outcomes {
                update.bind(1, o.status.rawValue)
                update.bind(2, o.httpStatus)
                update.bind(3, o.reason)
                update.bind(4, o.responseApnsId)
                update.bind(5, o.retryAt?.timeIntervalSince1970)
                update.bind(6, o.invalidatedAt)
                update.bind(7, o.apnsUniqueId)
                update.bind(8, o.latencyMs)
                update.bind(9, o.seq)
                try update.execute()
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
