import Foundation
import GRDB

/// What the throttle (`SendGate` in HeraldPipeline) does to recipients it claimed but does not
/// send. None of these counts as an attempt (a claim counts none; `record` counts the answer's),
/// so `retry.give_up_after`, which counts from the first attempt, does not start for a push that
/// never left.
extension RunState {
    /// The reason recorded for a recipient held back by the silent-push budget.
    public static let silentBudgetReason = "silent_budget"

    /// `throttle.silent_over_budget: skip`: final status `throttled`, reason `silent_budget`.
    public func markThrottled(_ recipients: [Int64], reason: String = RunState.silentBudgetReason) throws(StateError) {
        try write { db in
            let update = try db.cachedStatement(sql: """
                UPDATE recipient SET status = 'throttled', http_status = NULL, reason = ?, retry_at = NULL
                WHERE seq = ?
                """)
            for seq in recipients { try update.execute(arguments: [reason, seq]) }
        }
    }

    /// `throttle.frequency_cap`'s reason, for both `over_cap` choices.
    public static let frequencyCapReason = "frequency_cap"

    /// `throttle.frequency_cap.over_cap: defer`: the recipient waits for a slot as `scheduled`
    /// (claimed again once `until` comes, like a recipient waiting for its local window), reason
    /// `frequency_cap`; no attempt is counted.
    public func deferCapped(_ recipients: [(seq: Int64, until: Date)]) throws(StateError) {
        try write { db in
            let update = try db.cachedStatement(sql: """
                UPDATE recipient SET status = 'scheduled', http_status = NULL, reason = '\(Self.frequencyCapReason)', retry_at = ?
                WHERE seq = ?
                """)
            for r in recipients { try update.execute(arguments: [r.until.timeIntervalSince1970, r.seq]) }
        }
    }

    /// `schedule`, checked again as a claimed recipient leaves: outside its window or inside its
    /// quiet hours, it waits until `until`. A first push waits as `scheduled` (like a recipient whose
    /// window has not opened yet), a retry as `retry` with its last answer kept; no attempt is counted.
    public func holdForSchedule(_ recipients: [(seq: Int64, until: Date)]) throws(StateError) {
        try write { db in
            let update = try db.cachedStatement(sql: """
                UPDATE recipient SET status = CASE WHEN attempts > 0 THEN 'retry' ELSE 'scheduled' END, retry_at = ?
                WHERE seq = ?
                """)
            for r in recipients { try update.execute(arguments: [r.until.timeIntervalSince1970, r.seq]) }
        }
    }

    /// `throttle.silent_over_budget: defer`: the recipient waits (status `retry`, reason
    /// `silent_budget`) until its device's window opens, and this invocation neither claims it
    /// again nor waits for it: its run attempts are set to `runAttemptLimit` (the run's
    /// `retry.max_attempts`). The next `herald run` checks it again (`recheckDeferred`) and sends it
    /// if its window is open by then.
    public func deferSilent(_ recipients: [(seq: Int64, until: Date)], runAttemptLimit: Int) throws(StateError) {
        try write { db in
            let update = try db.cachedStatement(sql: """
                UPDATE recipient SET status = 'retry', http_status = NULL, reason = '\(Self.silentBudgetReason)', retry_at = ?,
                    run_attempts = ? WHERE seq = ?
                """)
            for r in recipients { try update.execute(arguments: [r.until.timeIntervalSince1970, runAttemptLimit, r.seq]) }
        }
    }

    /// At the start of a run's sending: deferred recipients become due at once, so the run checks
    /// them against the ledger again (which defers them again, without waiting, while their
    /// window is closed). The ledger is the truth, not the time computed when they were deferred:
    /// a raised `silent_per_device_per_hour` applies at once. Returns how many.
    @discardableResult
    public func recheckDeferred(now: Date = Date()) throws(StateError) -> Int {
        try write { db in
            try db.execute(sql: """
                UPDATE recipient SET retry_at = ?
                WHERE run = ? AND status = 'retry' AND \(Self.flagged) AND reason = '\(Self.silentBudgetReason)' AND retry_at > ?
                """, arguments: [now.timeIntervalSince1970, id, now.timeIntervalSince1970])
            return db.changesCount
        }
    }

    /// Recipients deferred by the silent-push budget and still waiting, and the earliest time one may go.
    public func deferredSilent() throws(StateError) -> (count: Int, earliest: Date?) {
        try read { db in
            let row = try Row.fetchOne(db, sql: """
                SELECT COUNT(*) AS n, MIN(retry_at) AS earliest FROM recipient
                WHERE run = ? AND status = 'retry' AND \(Self.flagged) AND reason = '\(Self.silentBudgetReason)'
                """, arguments: [id])
            return (row?["n"] ?? 0, (row?["earliest"] as Double?).map { Date(timeIntervalSince1970: $0) })
        }
    }

    /// Retries with attempts left in this run that are not due before `after` (held by the quiet
    /// hours), and the earliest time one may go.
    public func heldRetries(maxAttempts: Int, after: Date) throws(StateError) -> (count: Int, earliest: Date?) {
        try read { db in
            let row = try Row.fetchOne(db, sql: """
                SELECT COUNT(*) AS n, MIN(retry_at) AS earliest FROM recipient
                WHERE run = ? AND status = 'retry' AND \(Self.flagged) AND run_attempts < ? AND retry_at > ?
                """, arguments: [id, maxAttempts, after.timeIntervalSince1970])
            return (row?["n"] ?? 0, (row?["earliest"] as Double?).map { Date(timeIntervalSince1970: $0) })
        }
    }
}
