import Foundation
import HeraldCore
import HeraldDelivery
import HeraldSimulator

/// Where pushes go and with which credentials, resolved before anything is read or sent.
/// For `endpoint: simulator` it starts the in-process simulator on an ephemeral loopback port with
/// a fresh CA that only this client trusts: no credentials, no network.
final class DeliveryTarget {
    private(set) var settings: ConnectionSettings
    /// nil with certificate authentication: then no request carries `authorization`.
    let token: ProviderToken?
    let simulator: APNsSimulator?

    static let simulatorTeamId = "HERALDSIM1"
    static let simulatorKeyId = "HERALDKEY1"

    /// `credentials`: what `loadCredentials` read before the audience.
    init(spec: JobSpec, bundleId: String, credentials: Credentials) throws(RunFailure) {
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
                config.adoptsUnknownChannels = spec.isBroadcast
                Self.apply(spec.apns.simulator, to: &config)
                if let log = config.logPath {
                    try FileManager.default.createDirectory(atPath: (log as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                }
                let sim = try APNsSimulator.start(config)
                simulator = sim
                token = try ProviderToken(privateKeyPEM: privatePEM, source: "(simulator key)", teamId: teamId, keyId: keyId)
                settings = Self.timed(ConnectionSettings(baseURL: "https://127.0.0.1:\(sim.port)", trust: .caPEM(sim.caCertificatePEM), maxStreams: streams), spec.apns)
            } else {
                guard let base = spec.apns.endpoint.baseURL else {
                    throw RunFailure(.usage, "\(spec.jobFile): apns.auth or apns.certificate is required for endpoint \(spec.apns.endpoint.name)")
                }
                let trust: TLSTrust = spec.apns.caFile.map { .caFile($0) } ?? .system
                var s = ConnectionSettings(baseURL: base, trust: trust, maxStreams: streams)
                if let auth = spec.apns.auth {
                    token = try ProviderToken(auth: auth)
                } else if let identity = credentials.identity {
                    s.identity = identity
                    token = nil
                } else {
                    throw RunFailure(.usage, "\(spec.jobFile): apns.auth or apns.certificate is required for endpoint \(spec.apns.endpoint.name)")
                }
                simulator = nil
                settings = Self.timed(s, spec.apns)
            }
            settings.proxy = credentials.proxy
            try Self.probe(settings, spec: spec)
        } catch let e as RunFailure {
            throw e
        } catch let e as DeliveryError {
            throw RunFailure(.usage, e.description)
        } catch {
            throw RunFailure(.usage, "\(error)")
        }
    }

    func shutdown() { try? simulator?.shutdown() }

    /// The job's `apns.connect_timeout`, `request_timeout`, `idle_timeout`, `ping_interval` and `ping_timeout`.
    static func timed(_ settings: ConnectionSettings, _ apns: APNsSpec) -> ConnectionSettings {
        var s = settings
        s.connectTimeoutMs = apns.connectTimeout * 1000
        s.requestTimeoutMs = apns.requestTimeout * 1000
        s.idleTimeoutMs = apns.idleTimeout * 1000
        s.pingIntervalMs = apns.pingInterval * 1000
        s.pingTimeoutMs = apns.pingTimeout * 1000
        return s
    }

    /// The client certificate and the proxy settings, read once.
    struct Credentials {
        var identity: ClientIdentity?
        var proxy: ProxySettings?
        /// None: a run that connects nowhere (a cancelled campaign's).
        init(identity: ClientIdentity? = nil, proxy: ProxySettings? = nil) { self.identity = identity; self.proxy = proxy }
    }

    /// The certificate (file, password, key, validity) and the proxy credentials, read and checked
    /// before the audience is: a wrong password is exit 2 at once, not after reading a million rows.
    /// `forPushes`: so is a proxy the push connections cannot tunnel through, from the job or the
    /// environment (`https://`); channel management (libcurl) can use one.
    static func loadCredentials(_ spec: JobSpec, forPushes: Bool) throws(RunFailure) -> Credentials {
        do {
            let proxy = try spec.apns.proxy.map { try ProxySettings.resolve($0) }
            if forPushes { try ProxyCheck.usable(proxy, baseURL: spec.apns.endpoint.baseURL ?? "https://127.0.0.1") }
            return Credentials(identity: try spec.apns.certificate.map { try ClientIdentity.load($0) }, proxy: proxy)
        } catch let e as ClientCertificateError {
            throw RunFailure(.usage, "\(spec.jobFile): \(e.description)")
        } catch let e as ProxyError {
            throw RunFailure(.usage, "\(spec.jobFile): \(e.description)")
        } catch {
            throw RunFailure(.usage, "\(spec.jobFile): \(error)")
        }
    }

    /// With a client certificate or a proxy, one connection is tried before the first push
    /// (ConnectionProbe: the sender's own connect, through its proxy tunnel, up to the server's SETTINGS; no request), so a refused certificate ends the
    /// run with exit 3 and a refused tunnel with exit 2, instead of every recipient being retried
    /// as a connection error. Other failures are left to the send loop's retries.
    static func probe(_ settings: ConnectionSettings, spec: JobSpec) throws(RunFailure) {
        guard settings.identity != nil || (settings.proxy?.url != nil) else { return }
        switch ConnectionProbe.run(settings) {
        case .accepted, .unreachable, .untrusted:
            // An untrusted server stops the run from the send loop, with the same words.
            return
        case .refused(let why) where settings.identity != nil:
            throw RunFailure(.aborted, "\(spec.jobFile): APNs refused the client certificate \(settings.identity!.label) (apns.certificate): \(why); "
                             + "check that it is the app's current push certificate for this environment. Nothing was sent")
        case .refused(let why):
            throw RunFailure(.aborted, "\(spec.jobFile): APNs refused the connection: \(why). Nothing was sent")
        case .proxyRefused(let why, let credentials):
            let hint = credentials ? ": it wants credentials (apns.proxy user_env and password_env), or refused the ones given" : ""
            throw RunFailure(.usage, "\(spec.jobFile): apns.proxy \(settings.proxy?.url ?? "") refused the tunnel to APNs: \(why)\(hint). Nothing was sent")
        }
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

