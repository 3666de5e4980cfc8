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

    /// The list of one app's topic in one environment. The environment is named as the job's
    /// `endpoint` names it for the default one (as every list before `apns.apps` was), or by the
    /// URL `apns.endpoints` sends it to: a rehearsal never feeds or reads Apple's lists.
    /// `routed`: whether the run's recipients say their environment; a run that does not (one app,
    /// no environment field, or recipients recorded before there were environments) sends to the
    /// job's `endpoint`, whatever a recipient's stored environment says.
    func suppressionScope(app: AppSpec, environment: APNsEnvironment, routed: Bool) -> SharedStore.SuppressionScope {
        let environment = routed ? environment : spec.apns.defaultEnvironment
        let topic = (try? spec.push.type.topic(for: app.topic).get()) ?? app.topic
        let name = spec.apns.endpoints[environment] ?? (environment == spec.apns.defaultEnvironment ? spec.apns.endpoint.name : environment.name)
        return SharedStore.SuppressionScope(environment: name, topic: topic)
    }

    /// The list of each of these apps (by the state file's number) in each environment.
    func suppressionScopes(_ apps: [(number: UInt16, app: AppSpec)], routed: Bool) -> [SuppressionLists.Route: SharedStore.SuppressionScope] {
        var scopes: [SuppressionLists.Route: SharedStore.SuppressionScope] = [:]
        for (number, app) in apps {
            for environment in APNsEnvironment.allCases {
                scopes[.init(app: number, environment: environment.rawValue)] = suppressionScope(app: app, environment: environment, routed: routed)
            }
        }
        return scopes
    }

    /// The run's apps (`RunState.apps`) the job still has, each with its number and the job's
    /// spec (found by name). An app the job dropped has none: its recipients' 410s and
    /// environments stay in the state file and reports only.
    func jobApps(_ stored: [RunApp]) -> [(number: UInt16, app: AppSpec)] {
        let apps = spec.apns.appList
        return stored.compactMap { s in apps.first { $0.name == s.name }.map { (s.number, $0) } }
    }

    /// herald-shared.sqlite beside the state file, when it exists (nil: no earlier campaign
    /// wrote a list or an environment there, so there is nothing to look up and no file is made).
    func existingSharedStore() throws(StateError) -> SharedStore? {
        let path = ((spec.statePath as NSString).deletingLastPathComponent as NSString).appendingPathComponent(SharedStore.fileName)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try SharedStore(besideStateFile: spec.statePath, volume: stateVolume)
    }

    func applySuppressionList(state: RunState, routing: AppRouting) throws(RunFailure) {
        guard try !Self.wrap(.preparing, { () throws(StateError) in try state.suppressionChecked() }) else { return }
        try suppressUnattempted(state: state, lists: try suppressionLists(routing: routing))
        try Self.wrap(.preparing) { () throws(StateError) in try state.markSuppressionChecked() }
    }

    /// Marks `suppressed` every never-attempted pending recipient whose token is on its app's and
    /// environment's list (and was not re-registered after its 410), a keyset page at a time.
    func suppressUnattempted(state: RunState, lists: SuppressionLists?) throws(RunFailure) {
        guard let lists else { return }
        try Self.wrap(.preparing) { () throws(StateError) in
            var after: Int64 = 0
            var suppressed = 0, reRegistered = 0
            while true {
                let page = try state.suppressionCandidates(after: after, limit: Self.suppressionPage)
                guard let last = page.last else { break }
                after = last.seq
                let verdict = try lists.verdict(page.map {
                    (key: SuppressedKey(app: UInt16(truncatingIfNeeded: $0.app), token: $0.token), environment: $0.environment, registeredAt: $0.registeredAt)
                })
                let hits = page.compactMap { c in
                    verdict.suppressed[SuppressedKey(app: UInt16(truncatingIfNeeded: c.app), token: c.token)].map { (seq: c.seq, invalidatedAt: $0) }
                }
                try state.suppress(hits)
                suppressed += hits.count
                reRegistered += verdict.reRegistered
            }
            if suppressed > 0 || reRegistered > 0 {
                logger.notice("suppression list: \(suppressed) recipient(s) not sent (APNs said their token is dead), \(reRegistered) sent again (registered after the 410)")
            }
        }
    }

    /// The suppression lists of the job's apps and environments, when herald-shared.sqlite exists
    /// and has entries for one of them (nil: nothing to look up).
    func suppressionLists(routing: AppRouting) throws(RunFailure) -> SuppressionLists? {
        try Self.wrap(.preparing) { () throws(StateError) -> SuppressionLists? in
            guard let shared = try existingSharedStore() else { return nil }
            var lists: [SuppressionLists.Route: SharedStore.SuppressionScope] = [:]
            for (route, scope) in suppressionScopes(Array(zip(routing.numbers, routing.apps)), routed: spec.isRouted)
            where try shared.suppressionCount(scope: scope) > 0 {
                lists[route] = scope
            }
            return lists.isEmpty ? nil : SuppressionLists(shared: shared, scopes: lists)
        }
    }

    /// Adds this run's 410 tokens to the suppression lists of their apps and environments. Called
    /// at the end of every invocation (also when the run is already finished), from the state
    /// file, so a token whose 410 was recorded by an invocation killed before this point still
    /// reaches the list on the next one. A failure here is logged, not fatal: the state file and
    /// reports still hold the 410s. A recipient of an app the job no longer has keeps its 410 in
    /// the state file and reports only.
    func recordInvalidatedTokens(state: RunState, run: RunInfo) {
        do {
            let shared = try SharedStore(besideStateFile: spec.statePath, volume: stateVolume)
            let apps = try state.apps()
            // A run from before apps were numbered has none: its one app is the job's.
            let scopes = apps.isEmpty ? suppressionScopes(spec.apns.appList.prefix(1).map { (0, $0) }, routed: false)
                                      : suppressionScopes(jobApps(apps), routed: try state.isRouted())
            var batches: [SuppressionLists.Route: [SuppressedToken]] = [:]
            var total = 0
            func flush(_ route: SuppressionLists.Route) throws(StateError) {
                guard let batch = batches[route], !batch.isEmpty, let scope = scopes[route] else { batches[route] = nil; return }
                try shared.addSuppressions(batch, scope: scope, campaign: run.campaign)
                total += batch.count
                batches[route] = nil
            }
            // Streamed: a page of the state file's 410s at a time goes to the shared file (its own
            // short transaction, so parallel campaigns wait at most that long for it).
            try state.forEachInvalidatedToken { token, at, reason, r in
                let route = SuppressionLists.Route(app: UInt16(truncatingIfNeeded: r.app), environment: r.environment)
                batches[route, default: []].append(SuppressedToken(token: token, invalidatedAt: at, reason: reason))
                if batches[route]!.count >= Self.suppressionPage { try flush(route) }
            }
            for route in Array(batches.keys) { try flush(route) }
            if total > 0 { logger.info("suppression list: \(total) token(s) answered 410 recorded in \(shared.path)") }
        } catch {
            logger.warning("could not update the suppression list: \(error)")
        }
    }
}

/// The suppression lists of a run's apps and environments, opened once for the run.
struct SuppressionLists: Sendable {
    struct Route: Hashable, Sendable {
        var app: UInt16
        var environment: Int
    }
    let shared: SharedStore
    let scopes: [Route: SharedStore.SuppressionScope]

    /// Of these rows, the tokens that must not be sent (on their app's and environment's list, and
    /// not re-registered after their 410), with the 410's timestamp; and how many listed tokens
    /// registered again since, and so are sent.
    func verdict(_ rows: [(key: SuppressedKey, environment: Int, registeredAt: Int64?)]) throws(StateError)
        -> (suppressed: [SuppressedKey: Int64], reRegistered: Int) {
        var byRoute: [Route: [(key: SuppressedKey, registeredAt: Int64?)]] = [:]
        for row in rows {
            let route = Route(app: row.key.app, environment: row.environment)
            guard scopes[route] != nil else { continue }
            byRoute[route, default: []].append((row.key, row.registeredAt))
        }
        var suppressed: [SuppressedKey: Int64] = [:]
        var reRegistered = 0
        for (route, rows) in byRoute {
            let listed = try shared.suppressions(for: rows.map(\.key.token), scope: scopes[route]!)
            for row in rows {
                guard let entry = listed[row.key.token] else { continue }
                if let registered = row.registeredAt, registered > entry.invalidatedAt { reRegistered += 1; continue }
                suppressed[row.key] = entry.invalidatedAt
            }
        }
        return (suppressed, reRegistered)
    }
}
