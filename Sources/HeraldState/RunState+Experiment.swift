import Foundation
import GRDB
import HeraldCore

/// One arm of an experiment as the state file counts it: a variant's test recipients, its
/// rollout recipients (`rollout`), the holdout, or those waiting for the winner (`variant` nil).
public struct VariantCount: Sendable, Equatable {
    public var variant: String?
    public var rollout: Bool
    public var counts: [RecipientStatus: Int]
    public init(variant: String?, rollout: Bool, counts: [RecipientStatus: Int]) {
        self.variant = variant; self.rollout = rollout; self.counts = counts
    }
    public var total: Int { counts.values.reduce(0, +) }

    /// The group as reports and `herald status` name it: `b (test)`, `holdout`,
    /// `b (winner, rollout)`, `waiting for the winner`.
    public var label: String {
        switch (variant, rollout) {
        case (ExperimentSpec.holdoutName?, _): "holdout"
        case (let v?, true): "\(v) (winner, rollout)"
        case (let v?, false): "\(v) (test)"
        case (nil, _): "waiting for the winner"
        }
    }

    /// The order reports show arms in: each variant's test group by name, the holdout, the
    /// winner's rollout, then those still waiting for it.
    public static func ordered(_ arms: [VariantCount]) -> [VariantCount] {
        func rank(_ a: VariantCount) -> Int {
            if a.variant == ExperimentSpec.holdoutName { return 1 }
            if a.variant == nil { return 3 }
            return a.rollout ? 2 : 0
        }
        return arms.sorted { (rank($0), $0.variant ?? "") < (rank($1), $1.variant ?? "") }
    }
}

/// Why the winner cannot be rolled out.
public enum WinnerRelease: Sendable, Equatable {
    /// Released this many recipients (0: none was waiting).
    case released(Int)
    /// Recipients read before `winner` was one of the job's variants have no payload for it.
    case missingPayload(winner: String, recipients: Int, variants: [String])
}

extension RunState {
    /// Recipients waiting for the experiment's winner.
    public func awaitingWinnerCount() throws(StateError) -> Int {
        try read { db in try awaitingWinnerCount(db) }
    }

    func awaitingWinnerCount(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM recipient WHERE run = ? AND status = 'awaiting_winner' AND \(Self.flagged)",
                         arguments: [id]) ?? 0
    }

    /// Rolls the winner out to every recipient waiting for it, in one transaction: each one's
    /// staged row takes the winner's payload and headers (kept in `variant_payload` when the row
    /// was read), and the recipient becomes `pending` (or `scheduled`, `throttled` by its due
    /// time, as a new recipient), `variant` the winner, `rollout` 1. Test and holdout recipients
    /// are not touched: they are never sent again. After a crash either all of them are released
    /// or none is, and a rerun releases them again.
    public func releaseWinner(_ winner: String, now: Date = Date()) throws(StateError) -> WinnerRelease {
        // A killed invocation's claims are recovered first (as the send loop would before its
        // first claim): pending recipients at or below the claim mark count as in flight, and the
        // ones released here were never sent.
        let mark = try read { db in try Self.claimMark(db, run: id) }
        if mark != 0, try awaitingWinnerCount() > 0 {
            try recoverInflight(now: now)
        }
        return try write { db in
            let waiting = try awaitingWinnerCount(db)
            guard waiting > 0 else { return .released(0) }
            // A staged row read while no winner was chosen keeps every variant's payload apart
            // (its own `variant` is NULL); one read again once the winner was known (a changed
            // audience) already holds the winner's.
            let missing = try Int.fetchOne(db, sql: """
                SELECT COUNT(*) FROM recipient r JOIN audience_row a ON a.id = r.row
                WHERE r.run = ?1 AND r.status = 'awaiting_winner' AND \(Self.flagged) AND a.variant IS NOT ?2
                    AND NOT EXISTS (SELECT 1 FROM variant_payload v WHERE v.row = r.row AND v.variant = ?2)
                """, arguments: [id, winner]) ?? 0
            if missing > 0 {
                let known = try String.fetchAll(db, sql: "SELECT DISTINCT variant FROM variant_payload WHERE run = ? ORDER BY variant", arguments: [id])
                return .missingPayload(winner: winner, recipients: missing, variants: known)
            }
            try db.execute(sql: """
                UPDATE audience_row SET (payload, payload_reference, priority, collapse_id, expiration) =
                    (SELECT payload, payload_reference, priority, collapse_id, expiration FROM variant_payload v
                     WHERE v.row = audience_row.id AND v.variant = ?1)
                WHERE variant IS NOT ?1 AND id IN (SELECT row FROM recipient WHERE run = ?2 AND status = 'awaiting_winner' AND \(Self.flagged))
                """, arguments: [winner, id])
            // The winner's name first, so the start rule sees a rollout recipient with its variant.
            try db.execute(sql: """
                UPDATE recipient SET variant = ?1, rollout = 1 WHERE run = ?2 AND status = 'awaiting_winner' AND \(Self.flagged)
                """, arguments: [winner, id])
            try db.execute(sql: """
                UPDATE recipient SET (status, retry_at, reason) = (SELECT \(Self.startValues(now: "?2")))
                WHERE run = ?1 AND status = 'awaiting_winner' AND \(Self.flagged)
                """, arguments: [id, now.timeIntervalSince1970])
            try db.execute(sql: "DELETE FROM variant_payload WHERE run = ?", arguments: [id])
            return .released(waiting)
        }
    }

    /// Recipients per experiment arm and report status (the summary's `experiment`), in the
    /// order `VariantCount.ordered` gives.
    public func variantCounts() throws(StateError) -> [VariantCount] {
        try read { db in
            var out: [VariantCount] = []
            for row in try Row.fetchAll(db, sql: """
                \(Self.walksRun) SELECT variant, rollout, status, COUNT(*) FROM recipient
                WHERE run = ? AND (variant IS NOT NULL OR rollout = 1) GROUP BY variant, rollout, status
                """, arguments: [id]) {
                let variant: String? = row[0], rollout = (row[1] as Int) != 0
                guard let status = StoredStatus(rawValue: row[2])?.reportStatus else { continue }
                let n: Int = row[3]
                if let i = out.firstIndex(where: { $0.variant == variant && $0.rollout == rollout }) {
                    out[i].counts[status, default: 0] += n
                } else {
                    out.append(VariantCount(variant: variant, rollout: rollout, counts: [status: n]))
                }
            }
            return VariantCount.ordered(out)
        }
    }
}
