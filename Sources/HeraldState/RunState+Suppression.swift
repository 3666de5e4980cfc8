import Foundation
import GRDB
import HeraldCore

/// A recipient that has never been attempted, as the suppression check sees it.
public struct SuppressionCandidate: Sendable {
    public var seq: Int64
    public var token: String
    /// `audience.registered_at_field` of the recipient's row, ms since the epoch.
    public var registeredAt: Int64?
    /// Its app (`RunState.apps`' number) and environment: each has its own list.
    public var app: Int = 0
    public var environment: Int = 0
}

extension RunState {
    /// Whether the suppression list was applied to this run (once, after the audience is recorded
    /// and before the first push).
    public func suppressionChecked() throws(StateError) -> Bool {
        try read { db in try Int.fetchOne(db, sql: "SELECT suppression_checked FROM run WHERE id = ?", arguments: [id]) == 1 }
    }

    public func markSuppressionChecked() throws(StateError) {
        try write { db in try db.execute(sql: "UPDATE run SET suppression_checked = 1 WHERE id = ?", arguments: [id]) }
    }

    /// Up to `limit` never-attempted pending (or scheduled) recipients after `seq`, in audience order (a keyset
    /// page: memory stays flat whatever the audience).
    public func suppressionCandidates(after seq: Int64, limit: Int) throws(StateError) -> [SuppressionCandidate] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT r.seq, r.token, a.registered_at, \(StoredRoute.app("r")) AS app, \(StoredRoute.environment("r")) AS environment FROM recipient r LEFT JOIN audience_row a ON a.id = r.row
                WHERE r.run = ?1 AND r.seq > MAX(?2, (SELECT claimed_through FROM run WHERE id = ?1)) AND r.status IN ('pending', 'scheduled')
                    AND r.attempts = 0 ORDER BY r.seq LIMIT ?3
                """, arguments: [id, seq, limit]).map {
                SuppressionCandidate(seq: $0["seq"], token: $0["token"], registeredAt: $0["registered_at"], app: $0["app"], environment: $0["environment"])
            }
        }
    }

    /// Marks recipients `suppressed` (reason `suppression_list`, with the 410 timestamp that put the
    /// token on the list), in one transaction, before anything is sent. Only never-attempted
    /// pending recipients that are not in flight (above the claim mark) change, so applying a page
    /// twice after a crash is harmless.
    public func suppress(_ hits: [(seq: Int64, invalidatedAt: Int64)]) throws(StateError) {
        guard !hits.isEmpty else { return }
        try write { db in
            let update = try db.cachedStatement(sql: """
                UPDATE recipient SET status = 'suppressed', reason = 'suppression_list', invalidated_at = ?
                WHERE seq = ? AND status IN ('pending', 'scheduled') AND attempts = 0 AND seq > ?
                """)
            let mark = try Self.claimMark(db, run: id)
            for h in hits { try update.execute(arguments: [h.invalidatedAt, h.seq, mark]) }
        }
    }

    /// Streams this run's tokens that APNs answered 410 (Unregistered, ExpiredToken), with their
    /// timestamp and reason, for the suppression list.
    /// `route`: the recipient's app and environment (each has its own list).
    public func forEachInvalidatedToken(_ body: (_ token: String, _ invalidatedAt: Int64, _ reason: String, _ route: (app: Int, environment: Int)) throws -> Void) throws(StateError) {
        try read { db in
            let cursor = try Row.fetchCursor(db, sql: """
                SELECT token, invalidated_at, reason, \(StoredRoute.app()) AS app, \(StoredRoute.environment()) AS environment FROM recipient
                WHERE run = ? AND status = 'failed' AND \(Self.flagged) AND http_status = 410 AND invalidated_at IS NOT NULL ORDER BY seq
                """, arguments: [id])
            while let r = try cursor.next() { try body(r["token"], r["invalidated_at"], r["reason"], (r["app"], r["environment"])) }
        }
    }
}
