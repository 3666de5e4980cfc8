import Foundation
import HeraldCore
import HeraldDelivery
import HeraldSimulator

/// Where pushes go and with which credentials, resolved before anything is read or sent: one
/// connection pool per environment and credentials (docs/many-apps.md). Apps of one team share a
/// pool and its provider token (Apple: one token serves every topic of its team); another team's
/// key or a certificate gets its own pool, since a connection carries one identity. A job
/// without `apns.apps` has one pool.
/// For `endpoint: simulator` it starts the in-process simulator (one per environment rows use) on
/// an ephemeral loopback port with a fresh CA that only this client trusts: no credentials, no network.
final class DeliveryTarget {
    struct Pool {
        var settings: ConnectionSettings
        /// nil with certificate authentication: then no request carries `authorization`.
        var token: ProviderToken?
        var connections: Int
        var environment: APNsEnvironment
        /// The job's apps (indexes into `APNsSpec.appList`) it sends for.
        var apps: [Int]
    }
    private(set) var pools: [Pool] = []
    /// The pool of each of the job's apps (index into `appList`) in each environment (raw value).
    private(set) var poolOfApp: [[Int]] = []
    private(set) var simulators: [APNsSimulator] = []

    static let simulatorTeamId = "HERALDSIM1"
    static let simulatorKeyId = "HERALDKEY1"

    /// How log lines name each pool: `the pool of acme, acme-ipad (production)`.
    var poolNames: [String] {
        pools.map { "the pool of \($0.apps.map { apps[$0].name.isEmpty ? apps[$0].topic : apps[$0].name }.joined(separator: ", ")) (\($0.environment.name))" }
    }
    private var apps: [AppSpec] = []

    /// The single pool of a job without `apns.apps` (channel management, broadcasts).
    var settings: ConnectionSettings { pools[0].settings }
    var token: ProviderToken? { pools[0].token }
    var simulator: APNsSimulator? { simulators.first }

    /// `credentials`: what `loadCredentials` read before the audience. `environments`: those rows
    /// may use (the job's, and the other one with `audience.environment_field` or
    /// `apns.environment_fallback`).
    init(spec: JobSpec, bundleId: String, credentials: Credentials) throws(RunFailure) {
        do {
            let apps = spec.apns.appList
            self.apps = apps
            var environments = [spec.apns.defaultEnvironment]
            if spec.audience.environmentField != nil || spec.apns.environmentFallback { environments.append(spec.apns.defaultEnvironment.other) }
            // Each app's credential: its .p8 (by team and key id), its certificate, or the
            // simulator's key made at run time.
            var keys: [String: (team: String, key: String, privatePEM: String?)] = [:]
            var credentialOfApp: [String] = []
            for app in apps {
                if let auth = app.auth {
                    let id = "token \(auth.teamId) \(auth.keyId)"
                    if keys[id] == nil { keys[id] = (auth.teamId, auth.keyId, spec.apns.endpoint == .simulator ? try AuthKeySource.read(auth.key).pem : nil) }
                    credentialOfApp.append(id)
                } else if let certificate = app.certificate {
                    credentialOfApp.append("certificate \(certificate)")
                } else {
                    credentialOfApp.append("simulator")
                }
            }
            var tokens: [String: ProviderToken] = [:]
            var simulatorKeys: [SimulatorTokenKey] = []
            if spec.apns.endpoint == .simulator {
                // The demo key is made at run time; a job's own key works too (the simulator derives its public half).
                for id in Set(credentialOfApp).sorted() {
                    let topics = zip(apps, credentialOfApp).filter { $0.1 == id }.map(\.0.topic)
                    let team: String, kid: String, privatePEM: String, publicPEM: String
                    if let k = keys[id], let pem = k.privatePEM {
                        (team, kid, privatePEM) = (k.team, k.key, pem)
                        publicPEM = try SimulatorCredentials.publicKeyPEM(fromPrivateKeyPEM: pem)
                    } else {
                        (team, kid) = (Self.simulatorTeamId, Self.simulatorKeyId)
                        (privatePEM, publicPEM) = SimulatorCredentials.generate()
                    }
                    simulatorKeys.append(SimulatorTokenKey(teamId: team, keyId: kid, publicKeyPEM: publicPEM, bundleIds: apps.count > 1 ? topics : []))
                    tokens[id] = try ProviderToken(privateKeyPEM: privatePEM, source: "(simulator key)", teamId: team, keyId: kid)
                }
            } else {
                for app in apps {
                    guard let auth = app.auth else { continue }
                    let id = "token \(auth.teamId) \(auth.keyId)"
                    if tokens[id] == nil { tokens[id] = try ProviderToken(auth: auth) }
                }
            }
            var baseURLs: [APNsEnvironment: String] = [:]
            var trust: [APNsEnvironment: TLSTrust] = [:]
            for environment in environments {
                if let url = spec.apns.baseURL(for: environment) {
                    baseURLs[environment] = url
                    trust[environment] = spec.apns.caFile.map { .caFile($0) } ?? .system
                    continue
                }
                var config = SimulatorConfiguration(tokenKeys: simulatorKeys)
                // One app: its topic is checked as Apple checks the topic of a key's app (BadTopic, TopicDisallowed).
                if apps.count == 1 { config.bundleId = bundleId }
                config.adoptsUnknownChannels = spec.isBroadcast
                Self.apply(spec.apns.simulator, to: &config)
                if environments.count > 1, let log = config.logPath {
                    config.logPath = environment == spec.apns.defaultEnvironment ? log : (log as NSString).deletingPathExtension + ".\(environment.name).ndjson"
                }
                if let log = config.logPath {
                    try FileManager.default.createDirectory(atPath: (log as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                }
                let sim = try APNsSimulator.start(config)
                simulators.append(sim)
                baseURLs[environment] = "https://127.0.0.1:\(sim.port)"
                trust[environment] = .caPEM(sim.caCertificatePEM)
            }
            var poolIndex: [String: Int] = [:]
            poolOfApp = Array(repeating: [-1, -1], count: apps.count)
            for environment in environments {
                for (i, app) in apps.enumerated() {
                    let id = "\(environment.name) \(credentialOfApp[i])"
                    let connections = app.connections ?? spec.apns.connections
                    let streams = app.streamsPerConnection ?? spec.apns.streamsPerConnection
                    if let p = poolIndex[id] {
                        pools[p].apps.append(i)
                        pools[p].connections = max(pools[p].connections, connections)
                        pools[p].settings.maxStreams = max(pools[p].settings.maxStreams, streams)
                        poolOfApp[i][environment.rawValue] = p
                        continue
                    }
                    var s = Self.timed(ConnectionSettings(baseURL: baseURLs[environment]!, trust: trust[environment]!, maxStreams: streams), spec.apns)
                    let token = tokens[credentialOfApp[i]]
                    if token == nil {
                        guard let certificate = app.certificate, let identity = credentials.identities[certificate] else {
                            throw RunFailure(.usage, "\(spec.jobFile): \(Self.key(app, spec: spec, "auth")) or \(Self.key(app, spec: spec, "certificate")) is required for endpoint \(spec.apns.endpoint.name)")
                        }
                        s.identity = identity
                    }
                    s.proxy = credentials.proxy
                    poolIndex[id] = pools.count
                    poolOfApp[i][environment.rawValue] = pools.count
                    pools.append(Pool(settings: s, token: token, connections: connections, environment: environment, apps: [i]))
                }
            }
            for pool in pools where pool.environment == spec.apns.defaultEnvironment {
                try Self.probe(pool.settings, spec: spec, apps: pool.apps.map { apps[$0] })
            }
        } catch let e as RunFailure {
            shutdown()
            throw e
        } catch let e as DeliveryError {
            shutdown()
            throw RunFailure(.usage, e.description)
        } catch {
            shutdown()
            throw RunFailure(.usage, "\(error)")
        }
    }

    /// An app's job key, as messages name it: `apns.auth`, or `apns.apps[i].auth`.
    static func key(_ app: AppSpec, spec: JobSpec, _ key: String) -> String {
        guard let i = spec.apns.apps.firstIndex(where: { $0.name == app.name }) else { return "apns.\(key)" }
        return "apns.apps[\(i)].\(key)"
    }

    func shutdown() {
        for sim in simulators { try? sim.shutdown() }
        simulators = []
    }

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
        /// Each app's certificate (`apns.certificate`, or an app's), read and checked.
        var identities: [CertificateAuthSpec: ClientIdentity]
        var proxy: ProxySettings?
        /// None: a run that connects nowhere (a cancelled campaign's).
        init(identities: [CertificateAuthSpec: ClientIdentity] = [:], proxy: ProxySettings? = nil) { self.identities = identities; self.proxy = proxy }
    }

    /// The certificate (file, password, key, validity) and the proxy credentials, read and checked
    /// before the audience is: a wrong password is exit 2 at once, not after reading a million rows.
    /// `forPushes`: so is a proxy the push connections cannot tunnel through, from the job or the
    /// environment (`https://`); channel management (libcurl) can use one.
    static func loadCredentials(_ spec: JobSpec, forPushes: Bool) throws(RunFailure) -> Credentials {
        let proxy: ProxySettings?
        do {
            proxy = try spec.apns.proxy.map { try ProxySettings.resolve($0) }
            if forPushes { try ProxyCheck.usable(proxy, baseURL: spec.apns.endpoint.baseURL ?? "https://127.0.0.1") }
        } catch let e as ProxyError {
            throw RunFailure(.usage, "\(spec.jobFile): \(e.description)")
        } catch {
            throw RunFailure(.usage, "\(spec.jobFile): \(error)")
        }
        var identities: [CertificateAuthSpec: ClientIdentity] = [:]
        for app in spec.apns.appList {
            guard let certificate = app.certificate, identities[certificate] == nil else { continue }
            // With several apps, the message says whose certificate it is.
            let whose = spec.apns.apps.isEmpty ? "" : "app \(app.name): "
            do {
                identities[certificate] = try ClientIdentity.load(certificate)
            } catch let e as ClientCertificateError {
                throw RunFailure(.usage, "\(spec.jobFile): \(whose)\(e.description)")
            } catch {
                throw RunFailure(.usage, "\(spec.jobFile): \(whose)\(error)")
            }
        }
        return Credentials(identities: identities, proxy: proxy)
    }

    /// With a client certificate or a proxy, one connection is tried before the first push
    /// (ConnectionProbe: the sender's own connect, through its proxy tunnel, up to the server's SETTINGS; no request), so a refused certificate ends the
    /// run with exit 3 and a refused tunnel with exit 2, instead of every recipient being retried
    /// as a connection error. Other failures are left to the send loop's retries.
    static func probe(_ settings: ConnectionSettings, spec: JobSpec, apps: [AppSpec]) throws(RunFailure) {
        let whose = spec.apns.apps.isEmpty ? "" : " of app \(apps.map(\.name).joined(separator: ", "))"
        guard settings.identity != nil || (settings.proxy?.url != nil) else { return }
        switch ConnectionProbe.run(settings) {
        case .accepted, .unreachable, .untrusted:
            // An untrusted server stops the run from the send loop, with the same words.
            return
        case .refused(let why) where settings.identity != nil:
            throw RunFailure(.aborted, "\(spec.jobFile): APNs refused the client certificate\(whose) \(settings.identity!.label) (\(apps.first.map { key($0, spec: spec, "certificate") } ?? "apns.certificate")): \(why); "
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

