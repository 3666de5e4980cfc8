import Foundation
import GRDB
import HeraldCore

extension RunState {
    /// The streaming sender's one checkpoint: records answers, puts recipients back to pending,
    /// ends this run's retries for recipients past `retry.max_elapsed`, and claims the next
    /// recipients (the claim committed before they are returned), all in one transaction.
    /// With `synchronous=FULL` each commit is an fsync, so one commit per turn instead of two
    /// halves the sender's disk waits.
    public func commit(_ outcomes: [AttemptOutcome], release: [Int64] = [], exhaust: [Int64] = [], maxAttempts: Int,
                       claim limit: Int, now: Date = Date()) throws(StateError) -> [ClaimedRecipient] {
        try write { db in
            if !outcomes.isEmpty { try record(db, outcomes, now: now) }
            if !release.isEmpty { try self.release(db, release) }
            if !exhaust.isEmpty {
                // Still `retry` (the next run sends it), but no more attempts in this one.
                let update = try db.cachedStatement(sql: "UPDATE recipient SET run_attempts = MAX(run_attempts, ?) WHERE seq = ?")
                for seq in exhaust { try update.execute(arguments: [maxAttempts, seq]) }
            }
            // An operator's hold (`herald pause`, `herald cancel`) committed before this checkpoint
            // stops every claim from here on, whenever the run's watcher notices it: nothing new
            // leaves after the command's transaction.
            guard limit > 0, try Self.heldByOperator(db) == false else { return [] }
            return try claim(db, limit: limit, maxAttempts: maxAttempts, now: now)
        }
    }

    /// Whether `campaign_control` holds the campaign (one cached read of a one-row table).
    static func heldByOperator(_ db: Database) throws -> Bool {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM campaign_control")) ?? 0 > 0
    }

    /// Before the streaming sender starts: the recipients a crashed (or killed) invocation had
    /// claimed and not recorded (pending at or below the claim mark, or retries marked
    /// `inflight`) have an unknown outcome. They count one attempt (at the last claim's time),
    /// become plain `pending` with their apns-id, and are sent again; the mark starts over.
    public func recoverInflight(now: Date = Date()) throws(StateError) {
        try write { db in
            let claimedAt = try String.fetchOne(db, sql: "SELECT claimed_at FROM run WHERE id = ?", arguments: [id]) ?? Timestamp.iso(now)
            let attempt = "attempts = attempts + 1, first_attempt_at = COALESCE(first_attempt_at, ?2), last_attempt_at = ?2"
            try db.execute(sql: "\(Self.walksRun) UPDATE recipient SET \(attempt) WHERE \(Self.claimedPending)", arguments: [id, claimedAt])
            try db.execute(sql: "UPDATE recipient SET status = 'pending', \(attempt) WHERE run = ?1 AND status = 'inflight' AND \(Self.flagged)",
                           arguments: [id, claimedAt])
            try Self.resetClaimMark(db, run: id)
        }
    }

    /// The streaming sender has recorded or released everything it claimed: nothing is in flight,
    /// and recipients it put back (a stop, the deadline) are plain pending, no attempt counted.
    public func endClaims() throws(StateError) {
        try write { db in try Self.resetClaimMark(db, run: id) }
    }
}
