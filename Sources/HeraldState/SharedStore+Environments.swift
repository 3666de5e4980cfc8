import Foundation
import GRDB
import HeraldCore

/// The environment each token was last accepted in after the other answered BadDeviceToken
/// (`apns.environment_fallback`): a token from a TestFlight or debug build is the sandbox's, and a
/// campaign that learned so sends it there directly next time, instead of to production first.
/// Per topic: a token belongs to one app.
extension SharedStore {
    /// Records (or moves) tokens' environments, in one short transaction.
    public func rememberEnvironments(_ tokens: [(token: String, environment: APNsEnvironment)], topic: String, campaign: String,
                                     now: Date = Date()) throws(StateError) {
        guard !tokens.isEmpty else { return }
        let stamp = UTCText.seconds(now)
        try write { db in
            let upsert = try db.cachedStatement(sql: """
                INSERT INTO token_environment (topic, token, environment, campaign, recorded_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (topic, token) DO UPDATE SET environment = excluded.environment, campaign = excluded.campaign,
                    recorded_at = excluded.recorded_at
                """)
            for t in tokens { try upsert.execute(arguments: [topic, t.token, t.environment.name, campaign, stamp]) }
        }
    }

    /// The remembered environments of `tokens` (normalized hex) for `topic`, by token.
    public func rememberedEnvironments(for tokens: [String], topic: String) throws(StateError) -> [String: APNsEnvironment] {
        guard !tokens.isEmpty else { return [:] }
        return try read { db in
            var out: [String: APNsEnvironment] = [:]
            // SQLite's default limit is 32766 host parameters; pages stay far below it.
            for chunk in stride(from: 0, to: tokens.count, by: 500).map({ tokens[$0..<min($0 + 500, tokens.count)] }) {
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                var arguments: StatementArguments = [topic]
                _ = arguments.append(contentsOf: StatementArguments(Array(chunk)))
                for r in try Row.fetchAll(db, sql: "SELECT token, environment FROM token_environment WHERE topic = ? AND token IN (\(marks))",
                                          arguments: arguments) {
                    if let e = APNsEnvironment(name: r["environment"]) { out[r["token"]] = e }
                }
            }
            return out
        }
    }

    /// Tokens remembered for a topic (tests, operators' checks).
    public func rememberedEnvironmentCount(topic: String) throws(StateError) -> Int {
        try read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM token_environment WHERE topic = ?", arguments: [topic]) ?? 0 }
    }
}
