import Foundation
import GRDB
import HeraldCore

/// One app of a run as the state file numbers it (`run_app`): its recipients' `app`.
public struct RunApp: Sendable, Equatable {
    public var number: UInt16
    public var name: String
    public var topic: String
    public init(number: UInt16, name: String, topic: String) { self.number = number; self.name = name; self.topic = topic }
}

/// How the state file keeps a staged row's or a recipient's app, environment and fallback: one
/// integer, `route` = app << 2 | fallback << 1 | environment (migrations `12-apps` and
/// `13-route`; a staged row's fallback bit is 0). SQL reads the parts with these expressions.
enum StoredRoute {
    static func pack(app: Int, environment: Int, fellBack: Bool = false) -> Int { app << 2 | (fellBack ? 2 : 0) | (environment & 1) }
    /// The app's number (`run_app.app`), the environment (0 production, 1 sandbox), the fallback bit.
    static func app(_ table: String = "") -> String { "(\(table.isEmpty ? "" : table + ".")route >> 2)" }
    static func environment(_ table: String = "") -> String { "(\(table.isEmpty ? "" : table + ".")route & 1)" }
    static func fellBack(_ table: String = "") -> String { "(\(table.isEmpty ? "" : table + ".")route & 2)" }
}

extension RunState {
    /// Numbers the job's apps for this run (docs/many-apps.md): an app the run already has keeps
    /// its number (found by name, so a job that reorders `apns.apps` still finds its recipients),
    /// a new one gets the next; the topic is the job's. Returns each app's number, in the job's
    /// order, in one transaction with `routed` (the run's reports say which app and environment).
    public func registerApps(_ apps: [(name: String, topic: String)], routed: Bool) throws(StateError) -> [UInt16] {
        try write { db in
            var known = Dictionary(uniqueKeysWithValues: try Self.apps(db, run: id).map { ($0.name, $0.number) })
            var next = (known.values.max().map { Int($0) + 1 }) ?? 0
            var numbers: [UInt16] = []
            for app in apps {
                let number: UInt16
                if let n = known[app.name] {
                    number = n
                } else {
                    guard next <= Int(UInt16.max) else { throw StateError(path: store.path, message: "run \(id) has more apps than a state file numbers") }
                    number = UInt16(next)
                    next += 1
                    known[app.name] = number
                }
                try db.execute(sql: "INSERT INTO run_app (run, app, name, topic) VALUES (?, ?, ?, ?) ON CONFLICT (run, app) DO UPDATE SET topic = excluded.topic",
                               arguments: [id, Int(number), app.name, app.topic])
                numbers.append(number)
            }
            if routed { try db.execute(sql: "UPDATE run SET routed = 1 WHERE id = ? AND routed = 0", arguments: [id]) }
            return numbers
        }
    }

    /// The run's apps, by number.
    public func apps() throws(StateError) -> [RunApp] {
        try read { db in try Self.apps(db, run: id) }
    }

    static func apps(_ db: Database, run: Int64) throws -> [RunApp] {
        try Row.fetchAll(db, sql: "SELECT app, name, topic FROM run_app WHERE run = ? ORDER BY app", arguments: [run]).map {
            RunApp(number: UInt16(truncatingIfNeeded: $0["app"] as Int), name: $0["name"], topic: $0["topic"])
        }
    }

    /// Whether the run's reports and events say each recipient's app and environment.
    public func isRouted() throws(StateError) -> Bool {
        try read { db in try Self.routed(db, run: id) }
    }

    /// Recipients of each app not yet in a final state (what a job that dropped the app would strand).
    public func openCountByApp() throws(StateError) -> [UInt16: Int] {
        try read { db in
            var out: [UInt16: Int] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT \(StoredRoute.app()) AS app, COUNT(*) AS n FROM recipient WHERE run = ? AND status IN ('pending', 'retry', 'inflight', 'scheduled', 'awaiting_winner')
                GROUP BY 1
                """, arguments: [id]) {
                out[UInt16(truncatingIfNeeded: row["app"] as Int)] = row["n"]
            }
            return out
        }
    }
}

/// One app's recipients in one environment, by report status: summary.json's `apps`,
/// summary.html's table per app and `herald status`.
public struct AppCount: Sendable, Equatable {
    public var app: String
    public var environment: String
    public var counts: [RecipientStatus: Int]
    public init(app: String, environment: String, counts: [RecipientStatus: Int]) {
        self.app = app; self.environment = environment; self.counts = counts
    }
    public var total: Int { counts.values.reduce(0, +) }

    /// By app name, then production before sandbox.
    public static func ordered(_ counts: [AppCount]) -> [AppCount] {
        counts.sorted { ($0.app, $0.environment) < ($1.app, $1.environment) }
    }
}

extension RunState {
    /// Recipients per app and environment and report status; empty for a run that sends for one
    /// app to one environment.
    public func appCounts() throws(StateError) -> [AppCount] {
        try read { db in
            guard try Self.routed(db, run: id) else { return [] }
            var out: [AppCount] = []
            for row in try Row.fetchAll(db, sql: """
                \(Self.walksRun) SELECT COALESCE(p.name, ''), \(StoredRoute.environment("r")), r.status, COUNT(*) FROM recipient r
                LEFT JOIN run_app p ON p.run = r.run AND p.app = \(StoredRoute.app("r"))
                WHERE r.run = ? GROUP BY \(StoredRoute.app("r")), 2, r.status
                """, arguments: [id]) {
                let app: String = row[0]
                let environment = (row[1] as Int) == APNsEnvironment.sandbox.rawValue ? APNsEnvironment.sandbox.name : APNsEnvironment.production.name
                guard let status = StoredStatus(rawValue: row[2])?.reportStatus else { continue }
                let n: Int = row[3]
                if let i = out.firstIndex(where: { $0.app == app && $0.environment == environment }) {
                    out[i].counts[status, default: 0] += n
                } else {
                    out.append(AppCount(app: app, environment: environment, counts: [status: n]))
                }
            }
            return AppCount.ordered(out)
        }
    }
}

extension RunState {
    /// Moves never-attempted recipients to another environment (the one their token was last
    /// accepted in: `apns.environment_fallback`), as the suppression list's decisions are
    /// applied: only pending or scheduled recipients above the claim mark, so applying a page
    /// twice after a crash is harmless.
    public func moveEnvironments(_ moves: [(seq: Int64, environment: APNsEnvironment)]) throws(StateError) {
        guard !moves.isEmpty else { return }
        try write { db in
            let update = try db.cachedStatement(sql: """
                UPDATE recipient SET route = (route & ~1) | ? WHERE seq = ? AND status IN ('pending', 'scheduled') AND attempts = 0 AND seq > ?
                """)
            let mark = try Self.claimMark(db, run: id)
            for m in moves { try update.execute(arguments: [m.environment.rawValue, m.seq, mark]) }
        }
    }

    /// Recipients sent after moving to the other environment (`apns.environment_fallback`): the
    /// token, its app's number and the environment that accepted it, in audience order.
    public func forEachFallbackAccepted(_ body: (_ token: String, _ app: Int, _ environment: APNsEnvironment) throws -> Void) throws(StateError) {
        try read { db in
            let cursor = try Row.fetchCursor(db, sql: """
                \(Self.walksRun) SELECT token, \(StoredRoute.app()) AS app, \(StoredRoute.environment()) AS environment FROM recipient
                WHERE run = ? AND \(StoredRoute.fellBack()) != 0 AND status = 'sent' ORDER BY seq
                """, arguments: [id])
            while let r = try cursor.next() {
                try body(r["token"], r["app"], (r["environment"] as Int) == 1 ? .sandbox : .production)
            }
        }
    }
}
