import Foundation
import GRDB
import HeraldCore

/// What summary.json needs that the recipient rows cannot give back, kept in the run row so that a
/// summary regenerated later (`herald report`, a rerun of a finished campaign) shows the same figures.
public struct RunFigures: Sendable, Equatable {
    /// Seconds spent by every `herald run` invocation of this run (a SIGKILLed invocation adds
    /// nothing: it never reached the end where this is committed).
    public var activeSeconds: Double = 0
    public var counters = DeliveryCounters()
    /// The exit code of the last invocation that finished writing its reports.
    public var lastExitCode: Int?
    public init() {}
}

extension RunState {
    /// Adds one invocation's time and counters to the run, and records its exit code, in one
    /// transaction. The runner calls it once per invocation, just before writing the reports.
    public func addCounters(_ counters: DeliveryCounters, seconds: Double, exitCode: Int?) throws(StateError) {
        try write { db in
            try db.execute(sql: """
                UPDATE run SET active_seconds = active_seconds + ?, connections_opened = connections_opened + ?,
                    jwts_signed = jwts_signed + ?, retries = retries + ?, throttle_deferrals = throttle_deferrals + ?,
                    last_exit_code = COALESCE(?, last_exit_code) WHERE id = ?
                """, arguments: [max(0, seconds), counters.connectionsOpened, counters.jwtsSigned, counters.retries,
                                 counters.throttleDeferrals, exitCode, id])
        }
    }

    public func figures() throws(StateError) -> RunFigures {
        try read { db in
            var f = RunFigures()
            guard let r = try Row.fetchOne(db, sql: """
                SELECT active_seconds, connections_opened, jwts_signed, retries, throttle_deferrals, last_exit_code FROM run WHERE id = ?
                """, arguments: [id]) else { return f }
            f.activeSeconds = r["active_seconds"]
            f.counters.connectionsOpened = r["connections_opened"]
            f.counters.jwtsSigned = r["jwts_signed"]
            f.counters.retries = r["retries"]
            f.counters.throttleDeferrals = r["throttle_deferrals"]
            f.lastExitCode = r["last_exit_code"]
            return f
        }
    }
}
