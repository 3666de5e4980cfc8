import Foundation
import HeraldCore
@testable import HeraldState
import GRDB
import HeraldTestSupport
import Testing

/// Many apps as the state file keeps them: the apps' numbers, each recipient's app and
/// environment, and deduplication per app and token (docs/many-apps.md).
@Suite struct AppsStateTests {
    let dir = TemporaryDirectory("apps-state")

    func token(_ i: Int) -> DeviceToken { try! DeviceToken.normalize(String(format: "%064x", i)).get() }

    /// Rows (token number, app, environment) in audience order.
    func batch(_ rows: [(Int, UInt16, UInt8)], firstLine: Int = 2) -> IngestBatch {
        var b = IngestBatch()
        for (n, (i, app, environment)) in rows.enumerated() {
            var r = IngestBatch.Recipient(token: token(i), location: RowLocation(file: "a.csv", line: firstLine + n), recipientId: "u\(i)-\(app)",
                                          payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8), apnsId: "00000000-0000-5000-8000-\(String(format: "%012x", n))")
            r.app = app
            r.environment = environment
            b.recipients.append(r)
        }
        b.rows = rows.count
        return b
    }

    func open(_ name: String) throws -> RunState {
        let store = try StateStore(path: dir.file("\(name)/c.sqlite"))
        return store.run(try store.openRun(campaign: CampaignName(name)))
    }

    func rows(_ state: RunState) throws -> [DeliveryRow] {
        var out: [DeliveryRow] = []
        try state.forEachDelivery { out.append($0) }
        return out
    }

    @Test func appsKeepTheirNumbersWhenTheJobReordersThem() throws {
        let state = try open("numbers")
        #expect(try state.registerApps([("acme", "com.acme.app"), ("partner", "com.partner.app")], routed: true) == [0, 1])
        #expect(try state.registerApps([("partner", "com.partner.app2"), ("new", "com.new"), ("acme", "com.acme.app")], routed: true) == [1, 2, 0])
        #expect(try state.apps() == [RunApp(number: 0, name: "acme", topic: "com.acme.app"), RunApp(number: 1, name: "partner", topic: "com.partner.app2"),
                                     RunApp(number: 2, name: "new", topic: "com.new")])
        #expect(try state.isRouted())
        let plain = try open("plain")
        #expect(try plain.registerApps([("", "com.acme.app")], routed: false) == [0])
        #expect(try !plain.isRouted())
    }

    @Test func aTokenIsOneRecipientPerApp() throws {
        let state = try open("dedup")
        _ = try state.registerApps([("acme", "com.acme.app"), ("partner", "com.partner.app")], routed: true)
        // Token 1 for acme twice (a duplicate) and once for partner (another recipient); token 2 for acme.
        try state.ingest(batch([(1, 0, 0), (1, 1, 1), (2, 0, 0), (1, 0, 1)]))
        try state.markIngestComplete()
        let r = try rows(state)
        #expect(r.map(\.recipientId) == ["u1-0", "u1-1", "u2-0"])
        #expect(r.map(\.app) == ["acme", "partner", "acme"])
        #expect(r.map(\.environment) == ["production", "sandbox", "production"])
        #expect(try state.reload().duplicates == 1)
        let claimed = try state.claim(limit: 10)
        #expect(claimed.map(\.app) == [0, 1, 0] && claimed.map(\.environment) == [0, 1, 0])
    }

    @Test func aChangedAudienceMatchesRecipientsByAppAndToken() throws {
        let state = try open("passes")
        _ = try state.registerApps([("acme", "com.acme.app"), ("partner", "com.partner.app")], routed: true)
        try state.ingest(batch([(1, 0, 0), (2, 1, 0)]))
        try state.markIngestComplete()
        // Pass 2: token 1 moves to sandbox for acme (same recipient), token 2 is now acme's (a new
        // recipient; partner's token 2 vanished), token 3 is new.
        try state.ingest(batch([(1, 0, 1), (2, 0, 0), (3, 1, 0)]), pass: 2)
        try state.markIngestComplete(pass: 2)
        let r = try rows(state)
        #expect(r.map(\.recipientId) == ["u1-0", "u2-1", "u2-0", "u3-1"])
        #expect(r.map(\.status) == [.pending, .suppressed, .pending, .pending])
        #expect(r.map(\.environment) == ["sandbox", "production", "production", "production"])
    }

    @Test func sendingWhileReadingDeduplicatesPerApp() throws {
        let state = try open("streamed")
        _ = try state.registerApps([("acme", "com.acme.app"), ("partner", "com.partner.app")], routed: true)
        _ = try state.prepareSendWhileReading()
        let first = try state.ingestWhileSending(batch([(1, 0, 0), (1, 1, 0)]), suppressed: [SuppressedKey(app: 1, token: token(1).hex): 42])
        let second = try state.ingestWhileSending(batch([(1, 1, 0), (2, 0, 0)], firstLine: 4), suppressed: [:])
        #expect(first.recipients == 2 && first.duplicates == 0 && first.suppressed == 1)
        #expect(second.recipients == 1 && second.duplicates == 1)
        try state.markIngestComplete()
        let r = try rows(state)
        #expect(r.map(\.recipientId) == ["u1-0", "u1-1", "u2-0"])
        #expect(r.map(\.status) == [.pending, .suppressed, .pending], "only partner's token 1 is on its list")
    }

    @Test func aRunForOneAppHasNoAppColumns() throws {
        let state = try open("single")
        _ = try state.registerApps([("", "com.acme.app")], routed: false)
        try state.ingest(batch([(1, 0, 0)]))
        try state.markIngestComplete()
        let r = try rows(state)
        #expect(r.count == 1 && r[0].app == nil && r[0].environment == nil)
    }

    @Test func invalidatedTokensSayTheirAppAndEnvironment() throws {
        let state = try open("dead")
        _ = try state.registerApps([("acme", "com.acme.app"), ("partner", "com.partner.app")], routed: true)
        try state.ingest(batch([(1, 0, 0), (1, 1, 1)]))
        try state.markIngestComplete()
        let claimed = try state.claim(limit: 10)
        let outcomes = claimed.map { AttemptOutcome(seq: $0.seq, status: .failed, httpStatus: 410, reason: "Unregistered", invalidatedAt: 1_700_000_000_000) }
        try state.commit(outcomes, release: [], exhaust: [], maxAttempts: 3, claim: 0)
        var seen: [String] = []
        try state.forEachInvalidatedToken { t, _, _, route in seen.append("\(t == token(1).hex) \(route.app) \(route.environment)") }
        #expect(seen == ["true 0 0", "true 1 1"])
        #expect(try state.openCountByApp().isEmpty)
    }

    /// `environment_fallback`'s move is recorded with the answer: the environment flips and the
    /// recipient is marked moved, once; a second move of the same recipient changes nothing.
    @Test func aFallbackMovesARecipientToTheOtherEnvironmentOnce() throws {
        let state = try open("fallback")
        _ = try state.registerApps([("acme", "com.acme.app"), ("partner", "com.partner.app")], routed: true)
        try state.ingest(batch([(1, 1, 0), (2, 1, 1)]))
        try state.markIngestComplete()
        var moved = try state.claim(limit: 10).map { c -> AttemptOutcome in
            var o = AttemptOutcome(seq: c.seq, status: .retry, httpStatus: 400, reason: "BadDeviceToken", retryAt: Date(timeIntervalSinceNow: -1))
            o.switchesEnvironment = true
            return o
        }
        try state.commit(moved, release: [], exhaust: [], maxAttempts: 3, claim: 0)
        try state.endClaims()
        var claimed = try state.claim(limit: 10)
        #expect(claimed.map { "\($0.app) \($0.environment) \($0.fellBack)" } == ["1 1 true", "1 0 true"])
        moved = claimed.map { c -> AttemptOutcome in
            var o = AttemptOutcome(seq: c.seq, status: .retry, httpStatus: 400, reason: "BadDeviceToken", retryAt: Date(timeIntervalSinceNow: -1))
            o.switchesEnvironment = true
            return o
        }
        try state.commit(moved, release: [], exhaust: [], maxAttempts: 3, claim: 0)
        try state.endClaims()
        claimed = try state.claim(limit: 10)
        #expect(claimed.map { "\($0.app) \($0.environment) \($0.fellBack)" } == ["1 1 true", "1 0 true"], "never moved twice")
    }

    /// A state file that took `12-apps` in its first form (app, environment and fallback in three
    /// columns of their own) keeps every staged row's and recipient's app, environment and fallback.
    @Test func aStateFileWithAppColumnsMigratesToRoutes() throws {
        try FileManager.default.createDirectory(atPath: dir.file("migrate"), withIntermediateDirectories: true)
        let path = dir.file("migrate/c.sqlite")
        let old = try DatabaseQueue(path: path)
        try StateSchema.migrator.migrate(old, upTo: "11-experiments")
        try old.write { db in
            // `12-apps` as it was first released.
            try db.execute(sql: """
                ALTER TABLE run ADD COLUMN routed INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE run_app (run INTEGER NOT NULL, app INTEGER NOT NULL, name TEXT NOT NULL, topic TEXT NOT NULL, PRIMARY KEY (run, app)) WITHOUT ROWID;
                ALTER TABLE audience_row ADD COLUMN app INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE audience_row ADD COLUMN environment INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE recipient ADD COLUMN app INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE recipient ADD COLUMN environment INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE recipient ADD COLUMN fallback INTEGER NOT NULL DEFAULT 0;
                INSERT INTO grdb_migrations (identifier) VALUES ('12-apps');
                """)
            try db.execute(sql: """
                INSERT INTO run (id, run_id, campaign, started_at, routed) VALUES (1, 'r1', 'migrate', '2026-11-28T00:00:00.000Z', 1);
                INSERT INTO run_app (run, app, name, topic) VALUES (1, 0, 'acme', 'com.acme.app'), (1, 1, 'partner', 'com.partner.app');
                INSERT INTO audience_row (id, run, pass, token, file, line, recipient_id, payload, apns_id, app, environment)
                    VALUES (1, 1, 1, '\(token(1).hex)', 'a.csv', 2, 'u1', X'7B7D', 'i1', 1, 1), (2, 1, 1, '\(token(2).hex)', 'a.csv', 3, 'u2', X'7B7D', 'i2', 0, 0);
                INSERT INTO recipient (seq, run, token, file, line, recipient_id, apns_id, row, payload, app, environment, fallback, status)
                    VALUES (1, 1, '\(token(1).hex)', 'a.csv', 2, 'u1', 'i1', 1, NULL, 1, 1, 0, 'pending'),
                           (2, 1, '\(token(2).hex)', 'a.csv', 3, 'u2', 'i2', 2, NULL, 0, 1, 1, 'sent'),
                           (3, 1, '\(token(3).hex)', 'a.csv', 4, 'u3', 'i3', NULL, X'7B7D', 1, 0, 0, 'pending');
                """)
        }
        try old.close()
        let store = try StateStore(path: path)
        let state = store.run(try store.openRun(campaign: CampaignName("migrate")))
        #expect(try state.isRouted())
        let routes = try DatabaseQueue(path: path).read { db in
            (try Int.fetchAll(db, sql: "SELECT route FROM audience_row ORDER BY id"), try Int.fetchAll(db, sql: "SELECT route FROM recipient ORDER BY seq"),
             try Row.fetchAll(db, sql: "PRAGMA table_info(recipient)").map { $0["name"] as String })
        }
        #expect(routes.0 == [5, 0] && routes.1 == [5, 3, 4])
        #expect(!routes.2.contains("app") && !routes.2.contains("environment") && !routes.2.contains("fallback"))
        #expect(routes.2.filter { $0 == "route" }.count == 1)
        #expect(try state.claim(limit: 10).map { "\($0.seq) \($0.app) \($0.environment) \($0.fellBack)" } == ["1 1 1 false", "3 1 0 false"])
        var accepted: [String] = []
        try state.forEachFallbackAccepted { t, app, environment in accepted.append("\(t == token(2).hex) \(app) \(environment.name)") }
        #expect(accepted == ["true 0 sandbox"])
        #expect(try rows(state).map { "\($0.app ?? "-") \($0.environment ?? "-")" } == ["partner sandbox", "acme sandbox", "partner production"])
    }
}
