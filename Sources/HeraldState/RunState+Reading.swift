import Foundation
import GRDB
import HeraldCore

/// One recipient as `deliveries.csv` shows it.
public struct DeliveryRow: Sendable {
    public var file: String
    public var line: Int
    public var recipientId: String
    public var token: String
    public var status: StoredStatus
    public var httpStatus: Int?
    public var reason: String
    public var apnsId: String
    public var attempts: Int
    public var firstAttemptAt: String?
    public var lastAttemptAt: String?
    public var invalidatedAt: Int64?
    public var apnsUniqueId: String? = nil
    public var latencyMs: Int? = nil
    /// `schedule`: the recipient's time zone as the audience wrote it, and when it was due (UNIX
    /// seconds; nil without a schedule or when no window opens).
    public var timezone: String? = nil
    public var dueAt: Double? = nil
    /// `experiment`: the variant's name or `holdout` (nil: no experiment, or waiting for the
    /// winner), and whether the recipient is outside the test (nil: no experiment).
    public var variant: String? = nil
    public var rollout: Bool? = nil
    /// Many apps (`apns.apps`, `audience.environment_field`): the recipient's app name and
    /// environment (`production`, `sandbox`); nil for a run that sends for one app to one environment.
    public var app: String? = nil
    public var environment: String? = nil

    public init(file: String, line: Int, recipientId: String, token: String, status: StoredStatus, httpStatus: Int?, reason: String,
                apnsId: String, attempts: Int, firstAttemptAt: String?, lastAttemptAt: String?, invalidatedAt: Int64?,
                apnsUniqueId: String? = nil, latencyMs: Int? = nil, timezone: String? = nil, dueAt: Double? = nil,
                variant: String? = nil, rollout: Bool? = nil, app: String? = nil, environment: String? = nil) {
        self.file = file; self.line = line; self.recipientId = recipientId; self.token = token; self.status = status
        self.httpStatus = httpStatus; self.reason = reason; self.apnsId = apnsId; self.attempts = attempts
        self.firstAttemptAt = firstAttemptAt; self.lastAttemptAt = lastAttemptAt; self.invalidatedAt = invalidatedAt
        self.apnsUniqueId = apnsUniqueId; self.latencyMs = latencyMs; self.timezone = timezone; self.dueAt = dueAt
        self.variant = variant; self.rollout = rollout; self.app = app; self.environment = environment
    }

    init(_ c: DeliveryColumns) {
        func string(_ t: DeliveryColumns.Text) -> String? { c.text(t).map { String(decoding: $0, as: UTF8.self) } }
        self.init(file: string(.file) ?? "", line: c.line, recipientId: string(.recipientId) ?? "", token: string(.token) ?? "",
                  status: c.status, httpStatus: c.httpStatus, reason: string(.reason) ?? "", apnsId: string(.apnsId) ?? "",
                  attempts: c.attempts, firstAttemptAt: string(.firstAttemptAt), lastAttemptAt: string(.lastAttemptAt),
                  invalidatedAt: c.invalidatedAt, apnsUniqueId: string(.apnsUniqueId), latencyMs: c.latencyMs,
                  timezone: string(.timezone), dueAt: c.dueAt, variant: string(.variant), rollout: c.rollout,
                  app: string(.app), environment: string(.environment))
    }

    /// The text column `t`, as `DeliveryColumns.text` gives it from the state file: the one place
    /// that names the field behind each text column.
    public func text(_ t: DeliveryColumns.Text) -> String? {
        switch t {
        case .file: file
        case .recipientId: recipientId
        case .token: token
        case .reason: reason
        case .apnsId: apnsId
        case .firstAttemptAt: firstAttemptAt
        case .lastAttemptAt: lastAttemptAt
        case .apnsUniqueId: apnsUniqueId
        case .timezone: timezone
        case .variant: variant
        case .app: app
        case .environment: environment
        }
    }
}

/// One recipient's row as `forEachDeliveryColumns` reads it: its text as SQLite's own bytes,
/// valid only inside the callback (copy what must outlive it). Each column is asked of SQLite
/// once, here: the report writers read most of them twice or more.
public struct DeliveryColumns {
    /// The text columns, in the order `forEachDeliveryColumns` selects them.
    public enum Text: Int, CaseIterable {
        case file, recipientId, token, reason, apnsId, firstAttemptAt, lastAttemptAt, apnsUniqueId, timezone, variant, app, environment
    }

    public let line: Int
    public let status: StoredStatus
    public let httpStatus: Int?
    public let attempts: Int
    public let invalidatedAt: Int64?
    public let latencyMs: Int?
    /// When it was due (`schedule`), UNIX seconds; nil: no due time, or never (+Inf).
    public let dueAt: Double?
    /// `experiment`: outside the test (true), in it or held out (false); nil: no experiment.
    public let rollout: Bool?
    /// The text columns' bytes, element `Text.rawValue` for each (nil: NULL).
    private let texts: (Bytes, Bytes, Bytes, Bytes, Bytes, Bytes, Bytes, Bytes, Bytes, Bytes, Bytes, Bytes)
    private typealias Bytes = UnsafeRawBufferPointer?

    /// `routes`: with many apps, each app's name by number and each environment's name, as bytes
    /// that outlive the row (nil: the run sends for one app in one environment, both columns NULL).
    init(row r: RawRow, routes: RouteNames?) {
        var app: Bytes = nil, environment: Bytes = nil
        if let routes {
            let number = r.int(18)
            if number >= 0 && number < routes.apps.count { app = routes.apps[number] }
            environment = routes.environments[r.int(19) == APNsEnvironment.sandbox.rawValue ? 1 : 0]
        }
        texts = (r.optionalBytes(0), r.optionalBytes(2), r.optionalBytes(3), r.optionalBytes(6), r.optionalBytes(7),
                 r.optionalBytes(9), r.optionalBytes(10), r.optionalBytes(12), r.optionalBytes(14), r.optionalBytes(16),
                 app, environment)
        line = r.int(1); status = StoredStatus(bytes: r.bytes(4)) ?? .pending; httpStatus = r.optionalInt(5)
        attempts = r.int(8); invalidatedAt = r.optionalInt64(11); latencyMs = r.optionalInt(13)
        dueAt = r.optionalDouble(15).flatMap { $0.isFinite ? $0 : nil }
        // An experiment's recipient has a variant or is a rollout one (waiting: no variant yet).
        let rolloutFlag = r.int(17) != 0
        rollout = rolloutFlag || texts.9 != nil ? rolloutFlag : nil
    }

    /// The column's UTF-8 bytes; nil when it is NULL. A homogeneous tuple is laid out as its
    /// elements one after the other, so element `t.rawValue` is found by its offset.
    public func text(_ t: Text) -> UnsafeRawBufferPointer? {
        withUnsafeBytes(of: texts) { $0.load(fromByteOffset: t.rawValue * MemoryLayout<Bytes>.stride, as: Bytes.self) }
    }
}

extension RunState {
    /// Streams recipients in audience order (a cursor: memory does not grow with the audience).
    /// Columns are read by position through `RawStatement`: GRDB's `Row` finds each column by
    /// name, a dictionary lookup per field of every row.
    /// The run's rows are read as a range of the table itself, already in `seq` order: with
    /// `run = ?` alone SQLite may pick an index and sort every row in a temporary B-tree.
    public func forEachDelivery(_ body: (DeliveryRow) throws -> Void) throws(StateError) {
        try forEachDeliveryColumns { c in try body(DeliveryRow(c)) }
    }

    /// `forEachDelivery` without a String per field: the report writers copy each column's bytes
    /// straight from SQLite into their buffers, instead of a String per field made and freed again
    /// for every row.
    public func forEachDeliveryColumns(_ body: (DeliveryColumns) throws -> Void) throws(StateError) {
        try read { db in
            // A run for one app in one environment has no app or environment to say: its columns stay empty.
            let routed = try Self.routed(db, run: id)
            let routes = routed ? RouteNames(apps: try Self.apps(db, run: id)) : nil
            defer { routes?.deallocate() }
            let rows = try RawStatement(db, sql: """
                \(Self.walksRun) SELECT file, line, recipient_id, token, status, http_status, reason, COALESCE(response_apns_id, apns_id),
                       attempts, first_attempt_at, last_attempt_at, invalidated_at, apns_unique_id, latency_ms, timezone, due_at,
                       variant, rollout, \(routes == nil ? "NULL, NULL" : "\(StoredRoute.app()), \(StoredRoute.environment())")
                FROM recipient
                WHERE seq BETWEEN (SELECT MIN(seq) FROM recipient WHERE run = ?1) AND (SELECT MAX(seq) FROM recipient WHERE run = ?1)
                  AND +run = ?1
                ORDER BY seq
                """)
            rows.bind(1, id)
            try rows.forEachRow { r in try body(DeliveryColumns(row: r, routes: routes)) }
        }
    }

    /// Streams invalid rows in the order they were read.
    public func forEachInvalid(_ body: (InvalidRow) throws -> Void) throws(StateError) {
        try read { db in
            let cursor = try Row.fetchCursor(db, sql: "SELECT file, line, reason, token_field, detail FROM invalid_row WHERE run = ? ORDER BY id", arguments: [id])
            while let r = try cursor.next() {
                try body(InvalidRow(location: RowLocation(file: r["file"], line: r["line"]),
                                    reason: InvalidRowReason(rawValue: r["reason"]) ?? .invalidToken,
                                    field: r["token_field"], detail: r["detail"]))
            }
        }
    }

    public func invalidRowCount() throws(StateError) -> Int {
        try read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM invalid_row WHERE run = ?", arguments: [id]) ?? 0 }
    }

    public func recipientCount() throws(StateError) -> Int {
        try read { db in try Int.fetchOne(db, sql: "\(Self.walksRun) SELECT COUNT(*) FROM recipient WHERE run = ?", arguments: [id]) ?? 0 }
    }

    /// The latest attempt of any recipient (for `herald status`).
    public func lastAttemptAt() throws(StateError) -> String? {
        try read { db in try String.fetchOne(db, sql: "\(Self.walksRun) SELECT MAX(last_attempt_at) FROM recipient WHERE run = ?", arguments: [id]) }
    }
}

/// The app and environment names a routed run's report rows point at: copied once per read, so
/// each row points at them instead of SQLite computing each row's app name.
final class RouteNames {
    /// By app number; nil for a number the run has no app for.
    let apps: [UnsafeRawBufferPointer?]
    /// `production`, `sandbox`.
    let environments: [UnsafeRawBufferPointer?]

    init(apps: [RunApp]) {
        var byNumber = [UnsafeRawBufferPointer?](repeating: nil, count: (apps.map { Int($0.number) }.max() ?? -1) + 1)
        // The one app of a job with `apns.topic` (routed by its environment field) has no name: empty.
        for app in apps where !app.name.isEmpty { byNumber[Int(app.number)] = Self.copy(app.name) }
        self.apps = byNumber
        environments = [Self.copy(APNsEnvironment.production.name), Self.copy(APNsEnvironment.sandbox.name)]
    }

    func deallocate() {
        for p in apps + environments { p?.deallocate() }
    }

    private static func copy(_ text: String) -> UnsafeRawBufferPointer {
        let bytes = Array(text.utf8)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        buffer.copyBytes(from: bytes)
        return UnsafeRawBufferPointer(buffer)
    }
}
