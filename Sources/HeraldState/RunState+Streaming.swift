import Foundation
import GRDB
import HeraldCore

extension RunState {
    /// The streaming sender's one checkpoint: records answers, puts recipients back to pending,
    /// ends this run's retries for recipients past `retry.max_elapsed`, and claims the next
    /// recipients (committed as `inflight` before they are returned), all in one transaction.
    /// With `synchronous=FULL` each commit is an fsync, so one commit per turn instead of two
    /// halves the sender's disk waits.
    public func commit(_ outcomes: [AttemptOutcome], release: [Int64] = [], exhaust: [Int64] = [], maxAttempts: Int,
                       claim limit: Int, now: Date = Date()) throws(StateError) -> [ClaimedRecipient] {
        try write { db in
            if !outcomes.isEmpty { try record(db, outcomes) }
            if !release.isEmpty {
                let update = try db.cachedStatement(sql: "UPDATE recipient SET status = 'pending', attempts = MAX(attempts - 1, 0), run_attempts = MAX(run_attempts - 1, 0) WHERE seq = ?")
                for seq in release { try update.execute(arguments: [seq]) }
            }
            if !exhaust.isEmpty {
                // Still `retry` (the next run sends it), but no more attempts in this one.
                let update = try db.cachedStatement(sql: "UPDATE recipient SET run_attempts = MAX(run_attempts, ?) WHERE seq = ?")
                for seq in exhaust { try update.execute(arguments: [maxAttempts, seq]) }
            }
            return limit > 0 ? try claim(db, limit: limit, maxAttempts: maxAttempts, now: now, includeInflight: false) : []
        }
    }

    /// Recipients a crashed run left `inflight` (outcome unknown) become `pending` again, keeping
    /// their apns-id, before the streaming sender starts: it then never confuses them with its own.
    public func recoverInflight() throws(StateError) {
        try write { db in try db.execute(sql: "UPDATE recipient SET status = 'pending' WHERE run = ? AND status = 'inflight'", arguments: [id]) }
    }
}
