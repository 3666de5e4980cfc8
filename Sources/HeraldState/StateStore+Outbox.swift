import Foundation
import GRDB
import HeraldCore

/// One recipient outcome waiting in the outbox for a sink.
public struct OutboxEvent: Sendable, Equatable {
    /// The outbox row: ascending in the order outcomes were recorded, never reused.
    public let id: Int64
    public let runId: String
    public let campaign: String
    public let recipientId: String
    public let token: String
    public let apnsId: String
    public let status: RecipientStatus
    public let reason: String
    public let httpStatus: Int?
    /// A 410's timestamp (ms since the epoch), or the suppression list's for a suppressed token.
    public let invalidatedAt: Int64?
    /// When the outcome was recorded (UTC, ISO 8601 with milliseconds).
    public let at: String
    /// The recipient is a broadcast channel (`token` holds its id).
    public var broadcast = false
    /// `experiment`: the recipient's variant (or `holdout`), and whether it is outside the test
    /// (nil: no experiment).
    public var variant: String? = nil
    public var rollout: Bool? = nil
    /// Many apps: the recipient's app name and environment (nil: a run for one app in one environment).
    public var app: String? = nil
    public var environment: String? = nil

    public init(id: Int64, runId: String, campaign: String, recipientId: String, token: String, apnsId: String, status: RecipientStatus,
                reason: String, httpStatus: Int?, invalidatedAt: Int64?, at: String) {
        self.id = id; self.runId = runId; self.campaign = campaign; self.recipientId = recipientId; self.token = token
        self.apnsId = apnsId; self.status = status; self.reason = reason; self.httpStatus = httpStatus
        self.invalidatedAt = invalidatedAt; self.at = at
    }
}

extension StateStore {
    /// Statuses an event is written for: every final one (`StoredStatus.isFinal`) but
    /// `awaiting_winner`, which is no outcome: the recipient's event comes once the winner's push
    /// is answered.
    static let eventStatuses = StoredStatus.allCases.filter { $0.isFinal && $0 != .awaitingWinner }.map { "'\($0.rawValue)'" }.joined(separator: ", ")

    /// From now on, on this connection, every recipient that reaches a final status gets an
    /// outbox row in the same transaction: the outcome is never recorded without its event, or
    /// the event without the outcome, whichever statement records it (answers, suppression,
    /// throttling, giving up, recipients made final when they are read).
    ///
    /// TEMP triggers live on this connection only and vanish with it: a run without `events`
    /// pays nothing, and the state file's schema does not depend on the job. A TEMP trigger may
    /// watch a table of the main database and its body's unqualified `event_outbox` resolves to
    /// the main one (https://sqlite.org/lang_createtrigger.html, "Cautions On The Use Of TEMP
    /// Triggers" and "Syntax Restrictions On UPDATE, DELETE, and INSERT Statements Within Triggers").
    public func captureEvents() throws(StateError) {
        try write { db in
            let insert = """
                INSERT INTO event_outbox (recipient, status, reason, http_status, invalidated_at, at)
                VALUES (NEW.seq, NEW.status, NEW.reason, NEW.http_status, NEW.invalidated_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
                """
            try db.execute(sql: """
                CREATE TEMP TRIGGER IF NOT EXISTS event_on_outcome AFTER UPDATE OF status ON main.recipient
                WHEN NEW.status IN (\(Self.eventStatuses)) AND NEW.status IS NOT OLD.status
                BEGIN \(insert) END;
                CREATE TEMP TRIGGER IF NOT EXISTS event_on_final_insert AFTER INSERT ON main.recipient
                WHEN NEW.status IN (\(Self.eventStatuses))
                BEGIN \(insert) END;
                """)
        }
    }

    /// How far `sink` has delivered: events with a larger id are waiting for it.
    public func eventCursor(sink: String) throws(StateError) -> Int64 {
        try read { db in
            try Int64.fetchOne(db, sql: "SELECT delivered_through FROM event_sink WHERE sink = ?", arguments: [sink]) ?? 0
        }
    }

    /// Events after `cursor`, oldest first.
    public func events(after cursor: Int64, limit: Int) throws(StateError) -> [OutboxEvent] {
        try read { db in
            let select = try RawStatement(cached: db, sql: """
                SELECT o.id, u.run_id, u.campaign, r.recipient_id, r.token, r.apns_id, o.status, o.reason, o.http_status,
                       o.invalidated_at, o.at, u.broadcast, r.variant, r.rollout, u.routed, p.name, \(StoredRoute.environment("r"))
                FROM event_outbox o JOIN recipient r ON r.seq = o.recipient JOIN run u ON u.id = r.run
                LEFT JOIN run_app p ON p.run = r.run AND p.app = \(StoredRoute.app("r"))
                WHERE o.id > ?1 ORDER BY o.id LIMIT ?2
                """)
            defer { select.clearBindings() }
            select.bind(1, cursor)
            select.bind(2, limit)
            var out: [OutboxEvent] = []
            try select.forEachRow { r in
                let status = StoredStatus(bytes: r.bytes(6))?.reportStatus ?? .failed
                out.append(OutboxEvent(id: r.int64(0), runId: r.string(1), campaign: r.string(2), recipientId: r.string(3),
                                       token: r.string(4), apnsId: r.string(5), status: status, reason: r.string(7),
                                       httpStatus: r.optionalInt(8), invalidatedAt: r.optionalInt64(9), at: r.string(10)))
                out[out.count - 1].broadcast = r.int64(11) == 1
                let variant = r.optionalString(12), rollout = r.int64(13) == 1
                if variant != nil || rollout {
                    out[out.count - 1].variant = variant
                    out[out.count - 1].rollout = rollout
                }
                if r.int64(14) == 1 {
                    out[out.count - 1].app = r.optionalString(15).flatMap { $0.isEmpty ? nil : $0 }
                    out[out.count - 1].environment = r.int64(16) == 1 ? APNsEnvironment.sandbox.name : APNsEnvironment.production.name
                }
            }
            return out
        }
    }

    /// Events waiting after `cursor`, counted up to `limit` (whether a batch is full).
    public func eventsWaiting(after cursor: Int64, limit: Int = Int.max) throws(StateError) -> Int {
        try read { db in
            try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM (SELECT 1 FROM event_outbox WHERE id > ? LIMIT ?)"),
                             arguments: [cursor, limit]) ?? 0
        }
    }

    /// `sink` has every event through `id` (`count` of them this time); the outbox drops what
    /// every sink in `sinks` has, in the same transaction.
    public func markEventsDelivered(sink: String, through id: Int64, count: Int, sinks: [String]) throws(StateError) {
        try write { db in
            try db.cachedStatement(sql: """
                INSERT INTO event_sink (sink, delivered_through, delivered) VALUES (?1, ?2, ?3)
                ON CONFLICT (sink) DO UPDATE SET delivered_through = MAX(delivered_through, ?2), delivered = delivered + ?3
                """).execute(arguments: [sink, id, count])
            var everywhere = id
            for other in sinks where other != sink {
                everywhere = min(everywhere, try Int64.fetchOne(db.cachedStatement(sql: "SELECT delivered_through FROM event_sink WHERE sink = ?"),
                                                                arguments: [other]) ?? 0)
            }
            try db.cachedStatement(sql: "DELETE FROM event_outbox WHERE id <= ?").execute(arguments: [everywhere])
        }
    }

    /// Where each of `sinks` stands (`herald status`): events it took over every run, and events
    /// in the outbox it has not taken yet.
    public func eventSinks(_ sinks: [String]) throws(StateError) -> [EventSinkState] {
        try read { db in
            try sinks.map { sink in
                let row = try Row.fetchOne(db, sql: "SELECT delivered_through, delivered FROM event_sink WHERE sink = ?", arguments: [sink])
                let through: Int64 = row?[0] ?? 0
                let waiting = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM event_outbox WHERE id > ?", arguments: [through]) ?? 0
                return EventSinkState(sink: sink, delivered: row?[1] ?? 0, waiting: waiting)
            }
        }
    }
}

/// An events sink as the state file has it.
public struct EventSinkState: Sendable, Equatable {
    public var sink: String
    /// Events it took, over every run of the state file.
    public var delivered: Int
    /// Events in the outbox it has not taken yet.
    public var waiting: Int
}
