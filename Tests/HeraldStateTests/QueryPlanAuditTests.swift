import Foundation
import HeraldCore
@testable import HeraldState
import GRDB
import HeraldTestSupport
import Synchronization
import Testing

/// Every statement herald runs on a state file, explained by SQLite: none may walk every
/// recipient of the file. A state file keeps every run of a campaign (a daily campaign adds a
/// million rows a day), so a statement about one run that scans the table, or a whole index,
/// gets slower with each run. The flow below drives each RunState operation on the second run of
/// a file whose first run is finished, and records what SQLite was asked through the test hook.
@Suite(.serialized) struct QueryPlanAuditTests {
    let dir = TemporaryDirectory("plans")

    func token(_ i: Int) -> DeviceToken { try! DeviceToken.normalize(String(format: "%064x", i)).get() }

    func batch(_ ids: ClosedRange<Int>) -> IngestBatch {
        var b = IngestBatch()
        b.recipients = ids.map { i in
            IngestBatch.Recipient(token: token(i), location: RowLocation(file: "a.csv", line: i + 1), recipientId: "u\(i)",
                                  payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8),
                                  apnsId: "00000000-0000-5000-8000-\(String(format: "%012x", i))")
        }
        b.rows = ids.count
        return b
    }

    /// Drives one run through everything a run does: ingest, claims, each kind of answer,
    /// releases, retries, recovery, the silent-push budget, suppression, counts and reports.
    func exercise(_ r: RunState, _ ids: ClosedRange<Int>) throws {
        try r.recordAudienceFiles([AudienceFingerprint(name: "a.csv", path: "/x/a.csv", size: 10, mtime: 1, sha256: "aa")])
        try r.ingest(batch(ids))
        try r.markIngestComplete()
        _ = try r.suppressionCandidates(after: 0, limit: 10)
        try r.suppress([(seq: try r.suppressionCandidates(after: 0, limit: 1)[0].seq, invalidatedAt: 1)])
        try r.markSuppressionChecked()
        _ = try r.statusCounts()
        try r.resetRunAttempts()
        try r.recoverInflight()
        let c = try r.claim(limit: 8, maxAttempts: 3)
        let soon = Date().addingTimeInterval(-1)
        _ = try r.commit([
            AttemptOutcome(seq: c[0].seq, status: .sent, httpStatus: 200, latencyMs: 3),
            AttemptOutcome(seq: c[1].seq, status: .failed, httpStatus: 410, reason: "Unregistered", invalidatedAt: 1_700_000_000_000),
            AttemptOutcome(seq: c[2].seq, status: .retry, httpStatus: 503, reason: "ServiceUnavailable", retryAt: soon),
        ], release: [c[3].seq], exhaust: [], maxAttempts: 3, claim: 4)
        try r.markThrottled([c[4].seq])
        try r.deferSilent([(seq: c[5].seq, until: Date().addingTimeInterval(60))], runAttemptLimit: 3)
        _ = try r.recheckDeferred()
        _ = try r.deferredSilent()
        _ = try r.nextRetryTime(maxAttempts: 3)
        _ = try r.nextDueTime()
        _ = try r.scheduledCount()
        _ = try r.claim(limit: 4, maxAttempts: 3)  // the due retry
        try r.recoverInflight()
        _ = try r.giveUp(olderThan: 3600)
        _ = try r.openCount()
        _ = try r.statusCounts()
        _ = try r.reasonCounts()
        _ = try r.invalidCounts()
        _ = try r.figures()
        _ = try r.recipientCount()
        _ = try r.lastAttemptAt()
        try r.forEachDeliveryColumns { _ in }
        try r.forEachInvalid { _ in }
        try r.forEachInvalidatedToken { _, _, _, _ in }
        // Delivery events: each outcome above wrote one; a sink reads and marks them.
        let events = try r.store.events(after: r.store.eventCursor(sink: "url"), limit: 10)
        #expect(!events.isEmpty)
        _ = try r.store.eventsWaiting(after: 0, limit: 500)
        try r.store.markEventsDelivered(sink: "url", through: events.last!.id, count: events.count, sinks: ["url", "file"])
        _ = try r.store.eventSinks(["url", "file"])
        try r.endClaims()
        // A changed audience: read again, by token.
        try r.startNewAudiencePass([AudienceFingerprint(name: "a.csv", path: "/x/a.csv", size: 12, mtime: 2, sha256: "bb")])
        try r.ingest(batch(ids.lowerBound...(ids.upperBound + 5)), pass: 2)
        try r.markIngestComplete(pass: 2)
        _ = try r.claim(limit: 50, maxAttempts: 3)
        try r.endClaims()
        try r.recoverInflight()
    }

    @Test func noStatementAboutOneRunWalksEveryRecipient() throws {
        let path = dir.file("audit.sqlite")
        _ = try StateStore(path: path)  // created and migrated before the statements are watched
        let seen = Mutex<Set<String>>([])
        SQLiteFile.statementObserver.withLock { $0 = { p, sql in if p == path { seen.withLock { _ = $0.insert(sql) } } } }
        defer { SQLiteFile.statementObserver.withLock { $0 = nil } }
        let store = try StateStore(path: path)
        try store.captureEvents()
        let first = try store.openRun(campaign: CampaignName("daily"))
        try exercise(store.run(first), 1...40)
        try store.run(first).finish()
        let second = try store.openRun(campaign: CampaignName("daily"), newRun: true)
        try exercise(store.run(second), 1001...1040)
        try store.run(second).finish()
        SQLiteFile.statementObserver.withLock { $0 = nil }

        let statements = seen.withLock { $0 }
        #expect(statements.count > 30, "the flow ran: \(statements.count) statements")
        let plans = try DatabaseQueue(path: path)
        var walks: [String] = []
        try plans.read { db in
            for sql in statements.sorted() where Self.about(recipients: sql) {
                // Statements over the ingest's temporary tables cannot be explained on another
                // connection; they read the run's staged rows once per ingest.
                if sql.contains("temp.") { continue }
                // Parameters left unbound (NULL): the plan does not depend on their values.
                let explain = try db.makeStatement(sql: "EXPLAIN QUERY PLAN " + sql)
                explain.setUncheckedArguments([])
                let detail = try Row.fetchAll(explain).map { $0["detail"] as String }
                // Two read one end of `recipient_run` (SQLite's min/max optimization, EXISTS
                // stopping at the first row), though their plans name the run's whole range.
                let oneEnd = ["SELECT MAX(seq) FROM recipient WHERE run = ?", "SELECT EXISTS (SELECT 1 FROM recipient WHERE run = ?)"]
                let marked = sql.drop(while: { $0.isWhitespace }).hasPrefix(RunState.walksRun) || oneEnd.contains(sql)
                if let walk = Self.walk(in: detail, marked: marked) { walks.append("\(walk)\n    in: \(sql)") }
                // PLAN_DUMP=1 swift test --filter QueryPlanAudit prints every plan.
                if ProcessInfo.processInfo.environment["PLAN_DUMP"] != nil { print("PLAN", detail, "\n   ", sql) }
            }
        }
        #expect(walks.isEmpty, "\(walks.count) statement(s) walk every recipient:\n\(walks.joined(separator: "\n"))")
    }

    /// Statements that read or change recipients (not schema changes, not pragmas). Leading
    /// comments (the `walksRun` marker among them) are skipped first: a marked statement is
    /// explained like any other, only its walk of the run is allowed.
    static func about(recipients sql: String) -> Bool {
        let s = withoutLeadingComments(sql).uppercased()
        guard s.hasPrefix("SELECT") || s.hasPrefix("UPDATE") || s.hasPrefix("DELETE") || s.hasPrefix("INSERT") else { return false }
        return s.contains("RECIPIENT")
    }

    /// The statement after its leading `/* … */` and `-- …` comments and whitespace.
    static func withoutLeadingComments(_ sql: String) -> Substring {
        var s = Substring(sql)
        while true {
            s = s.drop { $0.isWhitespace }
            if s.hasPrefix("/*") {
                guard let end = s.range(of: "*/") else { return "" }
                s = s[end.upperBound...]
            } else if s.hasPrefix("--") {
                guard let end = s.firstIndex(of: "\n") else { return "" }
                s = s[s.index(after: end)...]
            } else {
                return s
            }
        }
    }

    @Test func aMarkedStatementIsAboutRecipients() {
        #expect(Self.about(recipients: "\(RunState.walksRun) SELECT COUNT(*) FROM recipient WHERE run = ?"))
        #expect(Self.about(recipients: "  -- a note\n /* two */ /* comments */\nUPDATE recipient SET status = 'sent'"))
        #expect(!Self.about(recipients: "\(RunState.walksRun) CREATE INDEX recipient_token ON recipient(run, token)"))
        #expect(!Self.about(recipients: "/* unterminated SELECT * FROM recipient"))
    }

    @Test func aMarkedStatementMayWalkItsRunButNotTheTable() {
        let run = ["SEARCH recipient USING INDEX recipient_run (run=?)"]
        #expect(Self.walk(in: run, marked: false) != nil)
        #expect(Self.walk(in: run, marked: true) == nil)
        for scan in ["SCAN recipient", "SCAN r", "SCAN recipient USING COVERING INDEX recipient_run"] {
            #expect(Self.walk(in: [scan], marked: true) == scan)
            #expect(Self.walk(in: [scan], marked: false) == scan)
        }
    }

    /// The step of a plan that reads more than the rows it is after: a scan of the recipient table
    /// or of a whole index ("SCAN recipient", "SCAN r"), always; the run's every row ("(run=?)"
    /// alone on `recipient_run`) or a sort, unless the statement is marked as walking the run.
    static func walk(in detail: [String], marked: Bool) -> String? {
        detail.first { step in
            let words = step.split(separator: " ")
            if words.count >= 2, words[0] == "SCAN", words[1] == "recipient" || words[1] == "r" { return true }
            if marked { return false }
            return step.hasSuffix("recipient_run (run=?)") || step.hasPrefix("USE TEMP B-TREE")
        }
    }
}
