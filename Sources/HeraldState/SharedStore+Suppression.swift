import Foundation
import GRDB
import HeraldCore

/// One entry of the suppression list: a token APNs said is dead for a topic in an environment.
public struct SuppressedToken: Sendable, Equatable {
    public var token: String
    /// APNs' 410 timestamp, ms since the epoch.
    public var invalidatedAt: Int64
    public var reason: String
    public init(token: String, invalidatedAt: Int64, reason: String) {
        self.token = token; self.invalidatedAt = invalidatedAt; self.reason = reason
    }
}

/// The suppression list: tokens answered 410 by APNs, kept out of later campaigns of the same
/// environment and topic. Apple: Unregistered means "no need to send further pushes … unless your
/// application retrieves the same device token"; the audience's `registered_at_field` tells when
/// it did, and a registration newer than the 410 timestamp sends the token again.
/// https://developer.apple.com/documentation/usernotifications/handling-notification-responses-from-apns
extension SharedStore {
    /// Where a suppression applies: `environment` is the job's endpoint name (production, sandbox,
    /// simulator or the URL), `topic` the apns-topic sent.
    public struct SuppressionScope: Sendable, Equatable {
        public var environment: String
        public var topic: String
        public init(environment: String, topic: String) { self.environment = environment; self.topic = topic }
    }

    /// Adds or refreshes entries, in one short transaction; an entry keeps the latest timestamp.
    public func addSuppressions(_ tokens: [SuppressedToken], scope: SuppressionScope, campaign: String, now: Date = Date()) throws(StateError) {
        guard !tokens.isEmpty else { return }
        let stamp = UTCText.seconds(now)
        try write { db in
            let upsert = try db.cachedStatement(sql: """
                INSERT INTO suppression (environment, topic, token, invalidated_at, reason, campaign, recorded_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (environment, topic, token) DO UPDATE SET
                    invalidated_at = excluded.invalidated_at, reason = excluded.reason, campaign = excluded.campaign,
                    recorded_at = excluded.recorded_at
                WHERE excluded.invalidated_at > suppression.invalidated_at
                """)
            for t in tokens {
                try upsert.execute(arguments: [scope.environment, scope.topic, t.token, t.invalidatedAt, t.reason, campaign, stamp])
            }
        }
    }

    /// The entries among `tokens` (normalized hex), by token.
    public func suppressions(for tokens: [String], scope: SuppressionScope) throws(StateError) -> [String: SuppressedToken] {
        guard !tokens.isEmpty else { return [:] }
        return try read { db in
            var out: [String: SuppressedToken] = [:]
            // SQLite's default limit is 32766 host parameters; pages stay far below it.
            for chunk in stride(from: 0, to: tokens.count, by: 500).map({ tokens[$0..<min($0 + 500, tokens.count)] }) {
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                var arguments: StatementArguments = [scope.environment, scope.topic]
                _ = arguments.append(contentsOf: StatementArguments(Array(chunk)))
                for r in try Row.fetchAll(db, sql: """
                    SELECT token, invalidated_at, reason FROM suppression WHERE environment = ? AND topic = ? AND token IN (\(marks))
                    """, arguments: arguments) {
                    let t = SuppressedToken(token: r["token"], invalidatedAt: r["invalidated_at"], reason: r["reason"])
                    out[t.token] = t
                }
            }
            return out
        }
    }

    /// Entries in a scope (for tests and operators' checks).
    public func suppressionCount(scope: SuppressionScope) throws(StateError) -> Int {
        try read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM suppression WHERE environment = ? AND topic = ?",
                             arguments: [scope.environment, scope.topic]) ?? 0
        }
    }
}
