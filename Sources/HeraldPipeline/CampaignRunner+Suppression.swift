import Foundation
import HeraldCore
import HeraldState

/// The suppression list in `herald-shared.sqlite`: tokens APNs answered 410 in earlier campaigns
/// of the same environment and topic are not sent again (status `suppressed`, reason
/// `suppression_list`) unless the audience row's `registered_at_field` is newer than the 410.
///
/// Applied once per run, when the audience is fully recorded and before the first push (when
/// sending while reading, to each batch as it is recorded: `SendWhileReading`), and
/// recorded in the state file: a resumed run never consults the list again (the decisions are
/// in the state file), and a crash halfway through applying it is harmless because only
/// never-attempted pending recipients are touched and the run is marked checked only at the end.
/// At claim time instead, a token added to the list by a campaign running in parallel could be
/// skipped by one resume and not another; deciding before sending keeps every report reproducible.
extension CampaignRunner {
    static let suppressionPage = 2_000

    var suppressionScope: (String) -> SharedStore.SuppressionScope {
        { topic in SharedStore.SuppressionScope(environment: self.spec.apns.endpoint.name, topic: topic) }
    }

    func applySuppressionList(state: RunState, topic: String) throws(RunFailure) {
        guard try !Self.wrap(.preparing, { () throws(StateError) in try state.suppressionChecked() }) else { return }
        try suppressUnattempted(state: state, lookup: try suppressionLookup(topic: topic))
        try Self.wrap(.preparing) { () throws(StateError) in try state.markSuppressionChecked() }
    }

    /// Marks `suppressed` every never-attempted pending recipient whose token is on the list (and
    /// was not re-registered after its 410), a keyset page at a time.
    func suppressUnattempted(state: RunState, lookup: SuppressionLookup?) throws(RunFailure) {
        guard let lookup else { return }
        try Self.wrap(.preparing) { () throws(StateError) in
            var after: Int64 = 0
            var suppressed = 0, reRegistered = 0
            while true {
                let page = try state.suppressionCandidates(after: after, limit: Self.suppressionPage)
                guard let last = page.last else { break }
                after = last.seq
                let verdict = try lookup.verdict(page.map { ($0.token, $0.registeredAt) })
                let hits = page.compactMap { c in verdict.suppressed[c.token].map { (seq: c.seq, invalidatedAt: $0) } }
                try state.suppress(hits)
                suppressed += hits.count
                reRegistered += verdict.reRegistered
            }
            if suppressed > 0 || reRegistered > 0 {
                logger.notice("suppression list: \(suppressed) recipient(s) not sent (APNs said their token is dead), \(reRegistered) sent again (registered after the 410)")
            }
        }
    }

    /// The suppression list, when herald-shared.sqlite exists and has entries for this
    /// environment and topic (nil: nothing to look up).
    func suppressionLookup(topic: String) throws(RunFailure) -> SuppressionLookup? {
        try Self.wrap(.preparing) { () throws(StateError) -> SuppressionLookup? in
            let sharedPath = ((spec.statePath as NSString).deletingLastPathComponent as NSString).appendingPathComponent(SharedStore.fileName)
            guard FileManager.default.fileExists(atPath: sharedPath) else { return nil }
            let shared = try SharedStore(besideStateFile: spec.statePath, volume: stateVolume)
            let scope = suppressionScope(topic)
            return try shared.suppressionCount(scope: scope) > 0 ? SuppressionLookup(shared: shared, scope: scope) : nil
        }
    }

    /// Adds this run's 410 tokens to the suppression list. Called at the end of every invocation
    /// (also when the run is already finished), from the state file, so a token whose 410 was
    /// recorded by an invocation killed before this point still reaches the list on the next one.
    /// A failure here is logged, not fatal: the state file and reports still hold the 410s.
    func recordInvalidatedTokens(state: RunState, run: RunInfo) {
        do {
            let shared = try SharedStore(besideStateFile: spec.statePath, volume: stateVolume)
            let topic = (try? spec.push.type.topic(for: spec.apns.topic).get()) ?? spec.apns.topic
            var batch: [SuppressedToken] = []
            var total = 0
            func flush() throws(StateError) {
                try shared.addSuppressions(batch, scope: suppressionScope(topic), campaign: run.campaign)
                total += batch.count
                batch.removeAll(keepingCapacity: true)
            }
            // Streamed: a page of the state file's 410s at a time goes to the shared file (its own
            // short transaction, so parallel campaigns wait at most that long for it).
            try state.forEachInvalidatedToken { token, at, reason in
                batch.append(SuppressedToken(token: token, invalidatedAt: at, reason: reason))
                if batch.count >= Self.suppressionPage { try flush() }
            }
            try flush()
            if total > 0 { logger.info("suppression list: \(total) token(s) answered 410 recorded in \(shared.path)") }
        } catch {
            logger.warning("could not update the suppression list: \(error)")
        }
    }
}

/// The suppression list of one environment and topic, opened once for the run.
struct SuppressionLookup: Sendable {
    let shared: SharedStore
    let scope: SharedStore.SuppressionScope

    /// Of these (token, registered_at) pairs, the tokens that must not be sent (on the list, and
    /// not re-registered after their 410), with the 410's timestamp; and how many listed tokens
    /// registered again since, and so are sent.
    func verdict(_ rows: [(token: String, registeredAt: Int64?)]) throws(StateError) -> (suppressed: [String: Int64], reRegistered: Int) {
        let listed = try shared.suppressions(for: rows.map(\.token), scope: scope)
        guard !listed.isEmpty else { return ([:], 0) }
        var suppressed: [String: Int64] = [:]
        var reRegistered = 0
        for row in rows {
            guard let entry = listed[row.token] else { continue }
            if let registered = row.registeredAt, registered > entry.invalidatedAt { reRegistered += 1; continue }
            suppressed[row.token] = entry.invalidatedAt
        }
        return (suppressed, reRegistered)
    }
}
