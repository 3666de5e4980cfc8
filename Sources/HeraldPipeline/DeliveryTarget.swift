import Foundation
import HeraldCore
import HeraldDelivery
import HeraldSimulator

/// Where pushes go and with which credentials, resolved before anything is read or sent.
/// For `endpoint: simulator` it starts the in-process simulator on an ephemeral loopback port with
/// a fresh CA that only this client trusts: no credentials, no network.
final class DeliveryTarget {
    let settings: ConnectionSettings
    let token: ProviderToken
    let simulator: APNsSimulator?

    static let simulatorTeamId = "HERALDSIM1"
    static let simulatorKeyId = "HERALDKEY1"

    init(spec: JobSpec, bundleId: String) throws(RunFailure) {
        let streams = spec.apns.streamsPerConnection
        do {
            if spec.apns.endpoint == .simulator {
                // The demo key is made at run time; a job's own key works too (the simulator derives its public half).
                let teamId = spec.apns.auth?.teamId ?? Self.simulatorTeamId
                let keyId = spec.apns.auth?.keyId ?? Self.simulatorKeyId
                let privatePEM: String
                let publicPEM: String
                if let auth = spec.apns.auth {
                    privatePEM = try AuthKeySource.read(auth.key).pem
                    publicPEM = try SimulatorCredentials.publicKeyPEM(fromPrivateKeyPEM: privatePEM)
                } else {
                    (privatePEM, publicPEM) = SimulatorCredentials.generate()
                }
                var config = SimulatorConfiguration(teamId: teamId, keyId: keyId, publicKeyPEM: publicPEM)
                config.bundleId = bundleId
                Self.apply(spec.apns.simulator, to: &config)
                if let log = config.logPath {
                    try FileManager.default.createDirectory(atPath: (log as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                }
                let sim = try APNsSimulator.start(config)
                simulator = sim
                token = try ProviderToken(privateKeyPEM: privatePEM, source: "(simulator key)", teamId: teamId, keyId: keyId)
                settings = Self.timed(ConnectionSettings(baseURL: "https://127.0.0.1:\(sim.port)", trust: .caPEM(sim.caCertificatePEM), maxStreams: streams), spec.apns)
            } else {
                guard let auth = spec.apns.auth, let base = spec.apns.endpoint.baseURL else {
                    throw RunFailure(.usage, "\(spec.jobFile): apns.auth is required for endpoint \(spec.apns.endpoint.name)")
                }
                token = try ProviderToken(auth: auth)
                simulator = nil
                let trust: TLSTrust = spec.apns.caFile.map { .caFile($0) } ?? .system
                settings = Self.timed(ConnectionSettings(baseURL: base, trust: trust, maxStreams: streams), spec.apns)
            }
        } catch let e as RunFailure {
            throw e
        } catch let e as DeliveryError {
            throw RunFailure(.usage, e.description)
        } catch {
            throw RunFailure(.usage, "\(error)")
        }
    }

    func shutdown() { try? simulator?.shutdown() }

    /// The job's `apns.connect_timeout`, `request_timeout` and `idle_timeout`.
    static func timed(_ settings: ConnectionSettings, _ apns: APNsSpec) -> ConnectionSettings {
        var s = settings
        s.connectTimeoutMs = apns.connectTimeout * 1000
        s.requestTimeoutMs = apns.requestTimeout * 1000
        s.idleTimeoutMs = apns.idleTimeout * 1000
        return s
    }

    /// The job's `apns.simulator` keys onto the simulator's configuration. The simulator keeps
    /// counters, not every request, in memory: a campaign's memory must not grow with its audience.
    static func apply(_ rules: SimulatorRules, to config: inout SimulatorConfiguration) {
        config.keepsEntriesInMemory = false
        config.logPath = rules.logPath
        config.tokenRules = SimulatorTokenRules(
            unregisteredPrefixes: rules.unregisteredPrefixes, expiredTokenPrefixes: rules.expiredTokenPrefixes,
            badTokenPrefixes: rules.badTokenPrefixes, notForTopicPrefixes: rules.notForTopicPrefixes,
            flaky: rules.flaky.map { FlakyTokenRule(prefix: $0.prefix, failures: $0.count, status: $0.status) },
            answers: rules.answers.map { FixedAnswerRule(prefix: $0.prefix, reason: APNsReason($0.reason)) })
        config.faults = SimulatorFaults(
            p429: rules.p429, p500: rules.p500, p503: rules.p503, seed: rules.seed,
            latencyMs: rules.latencyMs, latencyJitterMs: rules.latencyJitterMs, goawayAfter: rules.goawayAfter,
            closeAfter: rules.closeAfter, closeMode: rules.closeBeforeProcessing ? .before : .after)
        if let n = rules.maxConcurrentStreams { config.maxConcurrentStreams = n }
        if let s = rules.jwtMaxAge { config.jwtMaxAgeSeconds = s }
        if let s = rules.tokenUpdateInterval { config.tokenUpdateIntervalSeconds = s }
    }
}

