import Foundation
import GRDB
import HeraldCore

/// A recipient taken for sending: already committed as `inflight` with its attempt counted.
public struct ClaimedRecipient: Sendable {
    /// The recipient's row: outcomes are recorded against it.
    public let seq: Int64
    public let token: DeviceToken
    public let payload: [UInt8]
    public let apnsId: String
    public let attempts: Int
    /// Set when the job templates headers per recipient.
    public let headers: RecipientHeaders?
    /// When it was claimed: the attempt's time (`last_attempt_at`) once its answer is recorded.
    public let claimedAt: Date
    /// Its time zone as the audience wrote it (`schedule`), for quiet hours on a retry.
    public let timezone: String?
    /// Its app, environment and fallback in one word, as the state file stores them (`StoredRoute`;
    /// the claim's recipients are copied on their way to the sender and back: every byte is
    /// copied per push).
    private let route: UInt32
    /// Its app (`RunState.apps`' number) and environment (`APNsEnvironment`'s raw value).
    public var app: Int { Int(route >> 2) }
    public var environment: Int { Int(route & 1) }
    /// Already moved to the other environment after BadDeviceToken (`apns.environment_fallback`).
    public var fellBack: Bool { route & 2 != 0 }

    public init(seq: Int64, token: DeviceToken, payload: [UInt8], apnsId: String, attempts: Int, headers: RecipientHeaders?, claimedAt: Date,
                timezone: String? = nil, app: Int = 0, environment: Int = 0, fellBack: Bool = false) {
        self.seq = seq; self.token = token; self.payload = payload; self.apnsId = apnsId; self.attempts = attempts
        self.headers = headers; self.claimedAt = claimedAt; self.timezone = timezone
        route = UInt32(truncatingIfNeeded: StoredRoute.pack(app: app, environment: environment, fellBack: fellBack))
    }

    init(seq: Int64, token: DeviceToken, payload: [UInt8], apnsId: String, attempts: Int, headers: RecipientHeaders?, claimedAt: Date,
         timezone: String?, storedRoute: Int) {
        self.seq = seq; self.token = token; self.payload = payload; self.apnsId = apnsId; self.attempts = attempts
        self.headers = headers; self.claimedAt = claimedAt; self.timezone = timezone
        route = UInt32(truncatingIfNeeded: storedRoute)
    }
}

/// The answer for one recipient, as the sender decided it.
public struct AttemptOutcome: Sendable {
    /// The recipient's row (`ClaimedRecipient.seq`).
    public var seq: Int64
    public var status: StoredStatus
    public var httpStatus: Int?
    public var reason: String
    public var responseApnsId: String?
    /// For `retry`: not before this time.
    public var retryAt: Date?
    /// A 410's timestamp (ms since the epoch): when APNs learned the token was dead.
    public var invalidatedAt: Int64?
    /// The answer's `apns-unique-id` (APNs sends it in development only), for delivery-log lookups.
    public var apnsUniqueId: String?
    /// Request to answer, this attempt; nil when no request completed.
    public var latencyMs: Int?
    /// When the attempt started (its claim); nil: when it is recorded.
    public var attemptedAt: Date?
    /// `retry` in the other environment (`apns.environment_fallback`): the recipient's
    /// `environment` flips and `fallback` is set, in the same transaction as the answer.
    public var switchesEnvironment = false

    public init(seq: Int64, status: StoredStatus, httpStatus: Int? = nil, reason: String = "",
                responseApnsId: String? = nil, retryAt: Date? = nil, invalidatedAt: Int64? = nil,
                apnsUniqueId: String? = nil, latencyMs: Int? = nil, attemptedAt: Date? = nil) {
        self.seq = seq; self.status = status; self.httpStatus = httpStatus; self.reason = reason
        self.responseApnsId = responseApnsId; self.retryAt = retryAt; self.invalidatedAt = invalidatedAt
        self.apnsUniqueId = apnsUniqueId; self.latencyMs = latencyMs; self.attemptedAt = attemptedAt
    }
}

extension RunState {
    /// Takes up to `limit` sendable recipients in audience order and commits the claim before
    /// returning: what leaves the process is always on disk first. Pending recipients are claimed
    /// by moving the run's high-water mark (`claimed_through`) past them, one number per claim;
    /// due `retry` recipients, out of audience order, are marked `inflight` one by one. Either way
    /// a claimed recipient is in flight until its answer is recorded, and after a crash
    /// `recoverInflight` finds it (outcome unknown: resent with the same apns-id). No attempt is
    /// counted here: `record` counts it with the answer.
    public func claim(limit: Int, maxAttempts: Int = Int.max, now: Date = Date()) throws(StateError) -> [ClaimedRecipient] {
        try write { db in try claim(db, limit: limit, maxAttempts: maxAttempts, now: now) }
    }

    func claim(_ db: Database, limit: Int, maxAttempts: Int, now: Date) throws -> [ClaimedRecipient] {
        // One range per status: pending recipients above the mark through the run's seqs
        // (recipient_run), due retries through the flagged status index. An OR across statuses
        // would walk every answered row on every claim, quadratic in the audience.
        // Rows are read and marked through the C API (RawStatement): GRDB's Row decoding by
        // column name would cost more than the UPDATE itself, once per recipient per attempt.
        let mark = try Self.claimMark(db, run: id)
        // A run for one app in one environment reads no app, environment or fallback: every
        // recipient's are the job's.
        let routed = try Self.routed(db, run: id)
        let route = routed ? ", r.route" : ""
        var out: [ClaimedRecipient] = []
        out.reserveCapacity(limit)
        /// Appends up to what `limit` leaves of the recipients that meet `condition` (a status and a
        /// test on `?5`, bound by `bindCondition`), in audience order; returns where they are in `out`.
        func take(_ condition: String, order: String = "r.seq", _ bindCondition: (RawStatement) -> Void) throws -> Range<Int> {
            let first = out.count
            guard first < limit else { return first..<first }
            let select = try RawStatement(cached: db, sql: """
                SELECT r.seq, r.token, COALESCE(a.payload, r.payload), r.apns_id, r.attempts, a.priority, a.collapse_id, a.expiration,
                       r.timezone, a.payload_reference\(route)
                FROM recipient r LEFT JOIN audience_row a ON a.id = r.row
                WHERE r.run = ?1 AND r.run_attempts < ?3 AND \(condition) ORDER BY \(order) LIMIT ?4
                """)
            select.bind(1, id)
            select.bind(3, maxAttempts)
            select.bind(4, limit - first)
            bindCondition(select)
            try select.forEachRow { r in
                var headers: RecipientHeaders?
                if !r.isNull(5) {
                    let expiration = r.optionalString(7).flatMap { ExpirationSpec(storageText: $0) } ?? .unset
                    headers = RecipientHeaders(priority: r.int(5), collapseId: r.optionalString(6), expiration: expiration)
                }
                out.append(ClaimedRecipient(seq: r.int64(0), token: DeviceToken(trustedCanonical: r.string(1)),
                                            payload: try payloadReferences.payload(r.bytes(2), reference: r.optionalInt64(9), seq: r.int64(0),
                                                                                     db: db, path: store.path),
                                            apnsId: r.string(3), attempts: r.int(4) + 1, headers: headers, claimedAt: now,
                                            timezone: r.optionalString(8), storedRoute: routed ? r.int(10) : 0))
            }
            return first..<out.count
        }
        let pending = try take("r.status = 'pending' AND r.seq > ?5") { $0.bind(5, mark) }
        let retries = try take("r.status = 'retry' AND r.\(Self.flagged) AND r.retry_at <= ?5") {
            $0.bind(5, now.timeIntervalSince1970 as Double?)
        }
        // Recipients whose local window has opened (`schedule`), earliest due first, through the
        // index of scheduled rows by due time: the ones not due yet are never read.
        let due = try take("r.status = 'scheduled' AND r.retry_at <= ?5", order: "r.retry_at, r.seq") {
            $0.bind(5, now.timeIntervalSince1970 as Double?)
        }
        // Marked after reading: the SELECT's index is the one the UPDATE changes.
        let update = try RawStatement(cached: db, sql: "UPDATE recipient SET status = 'inflight' WHERE seq = ?1")
        for c in out[retries] + out[due] {
            update.bind(1, c.seq)
            try update.execute()
        }
        var through = pending.isEmpty ? mark : out[pending.last!].seq
        if pending.count < limit {
            // No pending recipient is left above the mark: it moves to the run's last row, so the
            // next claims start there instead of walking again past every answered row (pending
            // rows are found through the run's seqs, not an index of pending rows). Rows added
            // later (sending while reading) come after it.
            let last = try Int64.fetchOne(db.cachedStatement(sql: "SELECT MAX(seq) FROM recipient WHERE run = ?"), arguments: [id]) ?? 0
            through = max(through, last)
        }
        if !out.isEmpty || through != mark {
            // Cached, like every statement of a commit: it runs on every commit, and preparing it
            // again each time is parsing and planning the same SQL again.
            try db.cachedStatement(sql: "UPDATE run SET claimed_through = ?, claimed_at = ? WHERE id = ?")
                .execute(arguments: [through, Timestamp.iso(now), id])
        }
        return out
    }

    /// Whether the run's recipients have apps and environments of their own (`registerApps`).
    static func routed(_ db: Database, run: Int64) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT routed FROM run WHERE id = ?"), arguments: [run]) ?? false
    }

    /// The run's claim mark: pending recipients at or below it are claimed (in flight).
    static func claimMark(_ db: Database, run: Int64) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT claimed_through FROM run WHERE id = ?"), arguments: [run]) ?? 0
    }

    /// SQL for "claimed and not answered": the run's (`?1`) pending recipients at or below the mark.
    static let claimedPending = "run = ?1 AND \(claimed)"
    /// A row of the run `?1` that is claimed and not answered (`claimedPending` without the run).
    static let claimed = "status = 'pending' AND seq <= (SELECT claimed_through FROM run WHERE id = ?1)"

    /// Nothing is claimed any more: the mark starts over.
    static func resetClaimMark(_ db: Database, run: Int64) throws {
        try db.execute(sql: "UPDATE run SET claimed_through = 0 WHERE id = ?", arguments: [run])
    }

    /// The earliest time a `retry` recipient with attempts left in this run may go again, if any waits.
    public func nextRetryTime(maxAttempts: Int) throws(StateError) -> Date? {
        try read { db in
            try Double.fetchOne(db, sql: """
                SELECT MIN(retry_at) FROM recipient WHERE run = ? AND status = 'retry' AND \(Self.flagged) AND run_attempts < ?
                """,
                                arguments: [id, maxAttempts]).map { Date(timeIntervalSince1970: $0) }
        }
    }

    /// When the next `scheduled` recipient is due (its local window opens), if any waits.
    public func nextDueTime() throws(StateError) -> Date? {
        try read { db in
            try Double.fetchOne(db, sql: "SELECT MIN(retry_at) FROM recipient WHERE run = ? AND status = 'scheduled'", arguments: [id])
                .map { Date(timeIntervalSince1970: $0) }
        }
    }

    /// When the last `scheduled` recipient is due (the last zone's window opens), if any waits.
    public func lastDueTime() throws(StateError) -> Date? {
        try read { db in
            try Double.fetchOne(db, sql: "SELECT MAX(retry_at) FROM recipient WHERE run = ? AND status = 'scheduled'", arguments: [id])
                .map { Date(timeIntervalSince1970: $0) }
        }
    }

    /// Of the `scheduled` recipients, those waiting for a frequency-cap slot rather than their
    /// local window (`throttle.frequency_cap` with `over_cap: defer`).
    public func cappedCount() throws(StateError) -> Int {
        try read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM recipient WHERE run = ? AND status = 'scheduled' AND \(Self.flagged) AND reason = ?",
                             arguments: [id, Self.frequencyCapReason]) ?? 0
        }
    }

    /// Recipients waiting for their local window (`scheduled`).
    public func scheduledCount() throws(StateError) -> Int {
        try read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM recipient WHERE run = ? AND status = 'scheduled' AND \(Self.flagged)", arguments: [id]) ?? 0
        }
    }

    /// Each invocation gets `retry.max_attempts` fresh tries per recipient; exhausted ones wait for the next run.
    /// A run that never claimed anything (its first invocation) has none to reset: that walk of
    /// every recipient is skipped.
    public func resetRunAttempts() throws(StateError) {
        try write { db in
            guard try String.fetchOne(db, sql: "SELECT claimed_at FROM run WHERE id = ?", arguments: [id]) != nil else { return }
            try db.execute(sql: "\(Self.walksRun) UPDATE recipient SET run_attempts = 0 WHERE run = ? AND run_attempts != 0", arguments: [id])
        }
    }

    /// Commits a batch of answers in one transaction, each counted as one attempt (at its claim's time).
    public func record(_ outcomes: [AttemptOutcome]) throws(StateError) {
        try write { db in try record(db, outcomes) }
    }

    func record(_ db: Database, _ outcomes: [AttemptOutcome], now: Date = Date()) throws {
        do {
            let update = try RawStatement(cached: db, sql: """
                UPDATE recipient SET status = ?1, http_status = ?2, reason = ?3, response_apns_id = COALESCE(?4, response_apns_id),
                    retry_at = ?5, invalidated_at = COALESCE(?6, invalidated_at), apns_unique_id = COALESCE(?7, apns_unique_id),
                    latency_ms = COALESCE(?8, latency_ms), attempts = attempts + 1, run_attempts = run_attempts + 1,
                    first_attempt_at = COALESCE(first_attempt_at, ?10), last_attempt_at = ?10 WHERE seq = ?9
                """)
            // A batch's answers share a few claim times: each is formatted once, into a buffer
            // SQLite reads in place. The status is a constant and the reason nearly always empty:
            // neither is copied either (a copying bind mallocs and frees: `RawStatement.bindStatic`).
            let stamp = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
            defer { update.clearBindings(); stamp.deallocate() }
            var stampedAt: Date?
            for o in outcomes {
                let at = o.attemptedAt ?? now
                if stampedAt != at {
                    var text = Timestamp.iso(at)
                    let length = text.withUTF8 { u in
                        precondition(u.count <= stamp.count)
                        stamp.copyMemory(from: UnsafeRawBufferPointer(u))
                        return u.count
                    }
                    stampedAt = at
                    update.bindStatic(10, text: UnsafeRawBufferPointer(rebasing: stamp[..<length]))
                }
                update.bindStatic(1, text: o.status.staticText)
                update.bind(2, o.httpStatus)
                if o.reason.isEmpty { update.bindStatic(3, text: UnsafeRawBufferPointer(start: nil, count: 0)) } else { update.bind(3, o.reason) }
                update.bind(4, o.responseApnsId)
                update.bind(5, o.retryAt?.timeIntervalSince1970)
                update.bind(6, o.invalidatedAt)
                update.bind(7, o.apnsUniqueId)
                update.bind(8, o.latencyMs)
                update.bind(9, o.seq)
                try update.execute()
                if o.switchesEnvironment {
                    try db.cachedStatement(sql: "UPDATE recipient SET route = ((route | 2) & ~1) | (1 - (route & 1)) WHERE seq = ? AND route & 2 = 0")
                        .execute(arguments: [o.seq])
                }
            }
        }
    }

    /// Puts claimed recipients back to `pending`, no attempt counted: when the campaign aborts
    /// because of our configuration (bad key, topic), not their token, and for the ones the send
    /// gate holds back (`throttle.deadline`, or a stop while waiting for the rate). A pending one stays
    /// below the claim mark, so it is claimable again only after `endClaims` (the send loop's end)
    /// or in the next run: every release happens while the loop is stopping.
    public func release(_ recipients: [Int64]) throws(StateError) {
        try write { db in try release(db, recipients) }
    }

    func release(_ db: Database, _ recipients: [Int64]) throws {
        let update = try db.cachedStatement(sql: "UPDATE recipient SET status = 'pending' WHERE seq = ? AND status = 'inflight'")
        for seq in recipients { try update.execute(arguments: [seq]) }
    }

    /// Retryable recipients that have been trying longer than `giveUpAfter` seconds become failed
    /// (`gave_up`), so one bad token cannot keep a campaign open forever.
    public func giveUp(olderThan seconds: Int, now: Date = Date()) throws(StateError) -> Int {
        try write { db in
            let cutoff = Timestamp.iso(now.addingTimeInterval(-Double(seconds)))
            try db.execute(sql: """
                \(Self.walksRun) UPDATE recipient SET status = 'failed', reason = 'gave_up'
                WHERE run = ? AND status IN ('retry', 'inflight', 'pending') AND first_attempt_at IS NOT NULL AND first_attempt_at < ?
                """, arguments: [id, cutoff])
            return db.changesCount
        }
    }

    /// Recipients by stored status.
    /// Pending recipients at or below the claim mark are in flight (claimed, not yet answered).
    public func statusCounts() throws(StateError) -> [StoredStatus: Int] {
        try read { db in
            // Flagged statuses from their index, grouped in its order; pending, sent and the
            // claimed pending rows in one pass over the run's rows (summed, not grouped: grouping
            // would sort every row).
            var out: [StoredStatus: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT status, COUNT(*) FROM recipient WHERE run = ? AND \(Self.flagged) GROUP BY status",
                                        arguments: [id]) {
                if let s = StoredStatus(rawValue: row[0]) { out[s] = row[1] }
            }
            var claimed = 0
            if let row = try Row.fetchOne(db, sql: """
                \(Self.walksRun) SELECT TOTAL(status = 'pending'), TOTAL(status = 'sent'),
                    TOTAL(\(Self.claimed))
                FROM recipient WHERE run = ?1
                """, arguments: [id]) {
                let (pending, sent) = (Int(row[0] as Double), Int(row[1] as Double))
                claimed = Int(row[2] as Double)
                if pending > 0 { out[.pending] = pending }
                if sent > 0 { out[.sent] = sent }
            }
            if claimed > 0 {
                out[.pending] = (out[.pending] ?? 0) - claimed
                if out[.pending] == 0 { out[.pending] = nil }
                out[.inflight, default: 0] += claimed
            }
            return out
        }
    }

    /// Recipients not in a final state (pending, in flight or waiting to retry): what decides
    /// whether a run finished.
    public func openCount() throws(StateError) -> Int {
        try read { db in
            try Int.fetchOne(db, sql: """
                \(Self.walksRun) SELECT (SELECT COUNT(*) FROM recipient WHERE run = ?1 AND status IN ('inflight', 'retry', 'scheduled') AND \(Self.flagged))
                     + (SELECT COUNT(*) FROM recipient WHERE run = ?1 AND status = 'pending')
                """, arguments: [id]) ?? 0
        }
    }

    /// Failed and pending recipients by reason (the summary's `by_reason`).
    public func reasonCounts() throws(StateError) -> [String: Int] {
        try read { db in
            var out: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: """
                \(Self.walksRun) SELECT reason, COUNT(*) AS n FROM recipient WHERE run = ? AND reason != '' GROUP BY reason
                """, arguments: [id]) {
                out[row["reason"]] = row["n"]
            }
            return out
        }
    }

    public func invalidCounts() throws(StateError) -> [String: Int] {
        try read { db in
            var out: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT reason, COUNT(*) AS n FROM invalid_row WHERE run = ? GROUP BY reason", arguments: [id]) {
                out[row["reason"]] = row["n"]
            }
            return out
        }
    }
}
