import Foundation
import GRDB
import HeraldCore

/// An operator's hold on a campaign (`herald pause`, `herald cancel`), kept in the campaign's
/// state file so that it holds whoever starts the next run, on whatever host, after reboots and
/// in copies of the file: no PID files and no signals between hosts.
public struct CampaignControl: Sendable, Equatable {
    public enum Action: String, Sendable {
        /// No run sends anything until `herald resume`; the recipients keep their state.
        case paused
        /// No run sends anything ever again; every recipient not yet final becomes `cancelled`.
        case cancelled
    }

    public var action: Action
    /// `user@host` of whoever gave the command.
    public var by: String
    /// When (UTC, ISO 8601).
    public var at: String
    /// `--reason`, or empty.
    public var reason: String

    public init(action: Action, by: String, at: String, reason: String) {
        self.action = action; self.by = by; self.at = at; self.reason = reason
    }

    /// "paused by ops@host at 2026-11-27T10:00:00Z (wrong text)".
    public var description: String {
        "\(action.rawValue) by \(by) at \(at)" + (reason.isEmpty ? "" : " (\(reason))")
    }

    /// The report reason of a recipient the cancellation made final: `cancelled`, with the
    /// operator's reason after a colon when one was given (as `connection_error: <detail>`).
    public var recipientReason: String { reason.isEmpty ? "cancelled" : "cancelled: \(reason)" }

    /// `{action, by, at, reason}`: summary.json's and `herald status --json`'s `control`.
    public var json: JSONValue {
        .object([.init("action", .string(action.rawValue)), .init("by", .string(by)), .init("at", .string(at)), .init("reason", .string(reason))])
    }
}

/// Why a control command could not be applied.
public enum CampaignControlError: Error, CustomStringConvertible, Equatable {
    /// `herald pause` or `herald resume` of a cancelled campaign.
    case cancelled(CampaignControl)

    public var description: String {
        switch self {
        case .cancelled(let control):
            return "the campaign was \(control.description); a cancelled campaign cannot be paused or resumed: "
                + "give the job a new campaign name (campaign:) to send again"
        }
    }
}

extension StateStore {
    /// The campaign's hold, if any. One read of a one-row table, with a statement kept prepared
    /// and no read-only switch around it (`inDatabase`, not `read`): a running campaign's watcher
    /// asks several times a second.
    public func control() throws(StateError) -> CampaignControl? {
        do { return try db.inDatabase { db in try Self.control(db) } } catch { throw StateError(path: path, error) }
    }

    static func control(_ db: Database) throws -> CampaignControl? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT action, by, at, reason FROM campaign_control WHERE id = 1")),
              let action = CampaignControl.Action(rawValue: row["action"]) else { return nil }
        return CampaignControl(action: action, by: row["by"], at: row["at"], reason: row["reason"])
    }

    /// Records `action` in its own transaction, and in the control log. A cancelled campaign stays
    /// cancelled: pausing it throws; cancelling it again keeps the first cancellation.
    /// Returns the hold now in force.
    @discardableResult
    public func setControl(_ action: CampaignControl.Action, by: String, reason: String, at: Date = Date()) throws(StateError) -> CampaignControl {
        let outcome: Result<CampaignControl, CampaignControlError> = try write { db in
            if let current = try Self.control(db), current.action == .cancelled {
                return action == .cancelled ? .success(current) : .failure(.cancelled(current))
            }
            let control = CampaignControl(action: action, by: by, at: UTCText.seconds(at), reason: reason)
            try db.execute(sql: """
                INSERT INTO campaign_control (id, action, by, at, reason) VALUES (1, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET action = excluded.action, by = excluded.by, at = excluded.at, reason = excluded.reason
                """, arguments: [action.rawValue, by, control.at, reason])
            try Self.log(db, action.rawValue, by: by, at: control.at, reason: reason)
            return .success(control)
        }
        switch outcome {
        case .success(let control): return control
        case .failure(let error): throw StateError(path: path, message: error.description)
        }
    }

    /// Clears a pause (`herald resume`). Returns the pause it cleared, nil if the campaign was not
    /// paused; throws for a cancelled campaign, which cannot be resumed.
    public func resume(by: String, at: Date = Date()) throws(StateError) -> CampaignControl? {
        let outcome: Result<CampaignControl?, CampaignControlError> = try write { db in
            guard let current = try Self.control(db) else { return .success(nil) }
            if current.action == .cancelled { return .failure(.cancelled(current)) }
            try db.execute(sql: "DELETE FROM campaign_control WHERE id = 1")
            try Self.log(db, "resumed", by: by, at: UTCText.seconds(at), reason: "")
            return .success(current)
        }
        switch outcome {
        case .success(let control): return control
        case .failure(let error): throw StateError(path: path, message: error.description)
        }
    }

    /// Every control command given to the campaign, oldest first (`herald status`).
    public func controlLog() throws(StateError) -> [(action: String, by: String, at: String, reason: String)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT action, by, at, reason FROM control_log ORDER BY id").map {
                (action: $0["action"], by: $0["by"], at: $0["at"], reason: $0["reason"])
            }
        }
    }

    private static func log(_ db: Database, _ action: String, by: String, at: String, reason: String) throws {
        try db.execute(sql: "INSERT INTO control_log (action, by, at, reason) VALUES (?, ?, ?, ?)", arguments: [action, by, at, reason])
    }
}

extension RunState {
    /// `herald cancel`: every recipient of the run not final yet (waiting, retrying, scheduled, or
    /// in flight when a run was killed) becomes final as `cancelled`, with `control`'s reason,
    /// in one transaction. A recipient whose request may have left keeps its attempts, so the
    /// reports show it was tried. Returns how many.
    @discardableResult
    public func cancelRemaining(_ control: CampaignControl) throws(StateError) -> Int {
        try write { db in
            try db.execute(sql: """
                \(Self.walksRun) UPDATE recipient SET status = 'cancelled', reason = ?, retry_at = NULL
                WHERE run = ? AND status IN ('pending', 'retry', 'scheduled', 'inflight', 'awaiting_winner')
                """, arguments: [control.recipientReason, id])
            return db.changesCount
        }
    }
}
