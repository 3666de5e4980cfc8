import Foundation
import HeraldCore
import HeraldState

extension CampaignRunner {
    /// Numbers the job's apps in the run's state (`RunState.registerApps`) and checks that every
    /// recipient still waiting has its app in the job: a job that dropped an app, or a run begun
    /// without `apns.apps` resumed with them, would strand those recipients (or send them with
    /// another app's topic). Exit 2 then, naming the apps.
    func registerApps(state: RunState, run: RunInfo) throws(RunFailure) -> AppRouting {
        let apps = spec.apns.appList
        let numbers = try Self.wrap(.preparing) { () throws(StateError) in
            try state.registerApps(apps.map { (name: $0.name, topic: $0.topic) }, routed: spec.isRouted)
        }
        let stored = try Self.wrap(.preparing) { () throws(StateError) in try state.apps() }
        let missing = stored.filter { !numbers.contains($0.number) }
        if !missing.isEmpty {
            let open = try Self.wrap(.preparing) { () throws(StateError) in try state.openCountByApp() }
            let stranded = missing.filter { (open[$0.number] ?? 0) > 0 }
            if !stranded.isEmpty {
                let names = stranded.map { $0.name.isEmpty ? "the app of apns.topic (\($0.topic))" : "\($0.name) (\($0.topic))" }
                let count = stranded.reduce(0) { $0 + (open[$1.number] ?? 0) }
                throw RunFailure(.usage, "\(spec.jobFile): the unfinished run \(run.runId) of campaign \(run.campaign) has \(count) recipient(s) "
                                 + "of \(names.joined(separator: ", ")), which the job no longer has in apns: restore the app to finish "
                                 + "that run, or give the new one its own state file (state:)")
            }
        }
        return AppRouting(job: spec, numbers: numbers)
    }
}

/// The environments tokens were last accepted in (`apns.environment_fallback`), read from the
/// shared file beside the state file, per app's topic.
struct EnvironmentMemory: Sendable {
    let shared: SharedStore
    /// The bundle id of each app, by the state file's number.
    let topics: [UInt16: String]

    /// Of these (app, token) pairs, those remembered in another environment than the one given:
    /// their index in `rows` and that environment.
    func moves(_ rows: [(app: UInt16, token: String, environment: Int)]) throws(StateError) -> [(index: Int, environment: APNsEnvironment)] {
        var byApp: [UInt16: [Int]] = [:]
        for (i, r) in rows.enumerated() where topics[r.app] != nil { byApp[r.app, default: []].append(i) }
        var out: [(index: Int, environment: APNsEnvironment)] = []
        for (app, indexes) in byApp {
            let known = try shared.rememberedEnvironments(for: indexes.map { rows[$0].token }, topic: topics[app]!)
            guard !known.isEmpty else { continue }
            for i in indexes {
                if let e = known[rows[i].token], e.rawValue != rows[i].environment { out.append((i, e)) }
            }
        }
        return out.sorted { $0.index < $1.index }
    }
}

extension CampaignRunner {
    /// `apns.environment_fallback`: the remembered environments, when the shared file has any for
    /// the job's apps (nil: nothing to look up).
    func environmentMemory(routing: AppRouting) throws(RunFailure) -> EnvironmentMemory? {
        guard spec.apns.environmentFallback else { return nil }
        return try Self.wrap(.preparing) { () throws(StateError) -> EnvironmentMemory? in
            guard let shared = try existingSharedStore() else { return nil }
            var topics: [UInt16: String] = [:]
            for (app, number) in zip(routing.apps, routing.numbers) {
                if try shared.rememberedEnvironmentCount(topic: app.topic) > 0 { topics[number] = app.topic }
            }
            return topics.isEmpty ? nil : EnvironmentMemory(shared: shared, topics: topics)
        }
    }

    /// Sends never-attempted recipients whose token was last accepted in the other environment
    /// there directly (before the suppression list, which is kept per environment). A page at a
    /// time; harmless to apply twice.
    func applyRememberedEnvironments(state: RunState, routing: AppRouting) throws(RunFailure) {
        guard let memory = try environmentMemory(routing: routing) else { return }
        try Self.wrap(.preparing) { () throws(StateError) in
            var after: Int64 = 0
            var moved = 0
            while true {
                let page = try state.suppressionCandidates(after: after, limit: Self.suppressionPage)
                guard let last = page.last else { break }
                after = last.seq
                let moves = try memory.moves(page.map { (app: UInt16(truncatingIfNeeded: $0.app), token: $0.token, environment: $0.environment) })
                try state.moveEnvironments(moves.map { (seq: page[$0.index].seq, environment: $0.environment) })
                moved += moves.count
            }
            if moved > 0 { logger.notice("environment fallback: \(moved) recipient(s) sent to the environment that last accepted their token") }
        }
    }

    /// Remembers, in the shared file, the environment that accepted each token after the other
    /// answered BadDeviceToken, for the next campaigns. At the end of every invocation, from the
    /// state file (as the suppression list is fed); a failure is logged, not fatal.
    func rememberFallbackEnvironments(state: RunState, run: RunInfo) {
        guard spec.apns.environmentFallback else { return }
        do {
            let shared = try SharedStore(besideStateFile: spec.statePath, volume: stateVolume)
            var topics: [Int: String] = [:]
            for (number, app) in jobApps(try state.apps()) { topics[Int(number)] = app.topic }
            var batches: [String: [(token: String, environment: APNsEnvironment)]] = [:]
            var total = 0
            func flush(_ topic: String) throws(StateError) {
                guard let batch = batches[topic], !batch.isEmpty else { return }
                try shared.rememberEnvironments(batch, topic: topic, campaign: run.campaign)
                total += batch.count
                batches[topic] = []
            }
            try state.forEachFallbackAccepted { token, app, environment in
                guard let topic = topics[app] else { return }
                batches[topic, default: []].append((token, environment))
                if batches[topic]!.count >= Self.suppressionPage { try flush(topic) }
            }
            for topic in Array(batches.keys) { try flush(topic) }
            if total > 0 { logger.info("environment fallback: \(total) token(s) remembered in \(shared.path) with the environment that accepted them") }
        } catch {
            logger.warning("could not remember the environments tokens were accepted in: \(error)")
        }
    }
}
