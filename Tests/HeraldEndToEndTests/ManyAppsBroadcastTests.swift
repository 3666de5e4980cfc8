import Foundation
import HeraldSimulator
import HeraldTestSupport
import Testing

/// Broadcasts for many apps (docs/many-apps.md#broadcasts) on the built binary, against two
/// `herald sim` processes standing for APNs production and sandbox, each with a channel
/// management port, two teams' keys and a client-certificate CA: `herald channels --app
/// --environment` makes each app's channels with that app's credentials; a broadcast audience
/// naming each channel's app and environment sends every channel once, to its own app's
/// `/4/broadcasts/apps/<bundle id>` on its own environment with its own credentials; a channel
/// named under another app is refused (`ChannelNotRegistered`) and recorded failed while the
/// others are sent; channels listed per app in the job go to the job's environment.
@Suite(.serialized) struct ManyAppsBroadcastTests {
    let dir = TemporaryDirectory("e2e-apps-broadcast")
    let herald = Herald()

    static let teamA = "TEAMAAAAAA", keyA = "KEYAAAAAAA"
    static let teamB = "TEAMBBBBBB", keyB = "KEYBBBBBBB"
    /// acme: team A's key; beta: team B's; partner: a client certificate.
    static let topics = ["acme": "com.acme.app", "beta": "com.beta.app", "partner": "com.partner.app"]
    static let apps = ["acme", "beta", "partner"]
    static let environments = ["production", "sandbox"]

    struct World {
        /// By environment name.
        let sims: [String: SimulatorProcess]
        let caFile: String
        let keyAFile: String
        let keyBFile: String
        let certificate: ClientCertificateFiles
        let simDirs: [TemporaryDirectory]

        func management(_ environment: String) -> String { "https://127.0.0.1:\(sims[environment]!.managementPort ?? 0)" }
        func stop() { for sim in sims.values { sim.stop() } }
    }

    func start() throws -> World {
        let keyA = TestKey(), keyB = TestKey()
        let ca = try SimulatorCertificateAuthority(commonName: "e2e apps broadcast client CA")
        var sims: [String: SimulatorProcess] = [:]
        var simDirs: [TemporaryDirectory] = []
        try FileManager.default.createDirectory(atPath: dir.file("sim"), withIntermediateDirectories: true)
        for environment in Self.environments {
            let simDir = TemporaryDirectory("e2e-apps-broadcast-\(environment)")
            simDirs.append(simDir)
            let arguments = try SimulatorProcess.tokenKeyArguments(keyA, teamId: Self.teamA, keyId: Self.keyA, bundleIds: ["com.acme.app"], in: simDir)
                + SimulatorProcess.tokenKeyArguments(keyB, teamId: Self.teamB, keyId: Self.keyB, bundleIds: ["com.beta.app"], in: simDir)
                + SimulatorProcess.clientCAArguments(ca, bundleIds: ["com.partner.app"], in: simDir)
                // Channel ids follow from the seed: another per environment, as Apple's are random.
                + ["--seed", environment == "production" ? "1" : "2"]
            sims[environment] = try SimulatorProcess(in: simDir, bundleId: nil, log: dir.file("sim/\(environment).ndjson"), management: true,
                                                     arguments: arguments)
        }
        let bundle = try Self.environments.map { try String(contentsOfFile: sims[$0]!.caFile, encoding: .utf8) }.joined()
        let keyAFile = try dir.write("keys/A.p8", keyA.privateKeyPEM)
        let keyBFile = try dir.write("keys/B.p8", keyB.privateKeyPEM)
        chmod(keyAFile, 0o600)
        chmod(keyBFile, 0o600)
        return World(sims: sims, caFile: try dir.write("keys/ca.pem", bundle), keyAFile: keyAFile, keyBFile: keyBFile,
                     certificate: try ClientCertificateFiles(issuedBy: ca, name: "partner-broadcast", in: dir), simDirs: simDirs)
    }

    /// A Live Activity broadcast for the three apps, production by default, each environment on
    /// its simulator; the job's `channels_endpoint` is production's management port.
    func job(_ name: String, world: World, rows: [String]? = nil, _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TestJob(name, rows: rows) {
            $0.apns.endpoint = "production"
            $0.apns.endpoints = "{ production: \"\(world.sims["production"]!.url)\", sandbox: \"\(world.sims["sandbox"]!.url)\" }"
            $0.apns.channelsEndpoint = world.management("production")
            $0.apns.caFile = world.caFile
            $0.apns.apps = [
                "{ name: acme, topic: com.acme.app, auth: { team_id: \(Self.teamA), key_id: \(Self.keyA), key_file: \"\(world.keyAFile)\" } }",
                "{ name: beta, topic: com.beta.app, auth: { team_id: \(Self.teamB), key_id: \(Self.keyB), key_file: \"\(world.keyBFile)\" } }",
                "{ name: partner, topic: com.partner.app, certificate: { p12_file: \"\(world.certificate.p12)\", password_env: HERALD_TEST_P12_PASSWORD } }",
            ]
            $0.push.type = "liveactivity"
            $0.push.template = "{ aps: { event: update, timestamp: auto, content-state: { home: 1 } } }"
            configure(&$0)
        }.write(in: dir)
    }

    func env(_ world: World) -> [String: String] { ["HERALD_TEST_P12_PASSWORD": world.certificate.password] }

    /// `herald channels <args>` for one app and environment, sandbox through `--channels-endpoint`.
    func channels(_ world: World, _ job: JobFile, _ command: String, app: String, environment: String, _ extra: [String] = []) throws -> RunResult {
        var args = ["channels", command, job.path, "--app", app] + extra
        if environment == "sandbox" { args += ["--environment", "sandbox", "--channels-endpoint", world.management("sandbox")] }
        return try herald(args, environment: env(world))
    }

    /// The broadcast requests a simulator logged.
    static func broadcasts(_ sim: SimulatorProcess) throws -> [[String: Any]] {
        try sim.entries().filter { ($0["path"] as? String)?.hasPrefix("/4/broadcasts/") == true }
    }

    static func channel(_ entry: [String: Any]) -> String { (entry["headers"] as? [String: String])?["apns-channel-id"] ?? "" }

    /// Each app's own credential on a logged request: team A's key, team B's key, or the certificate.
    static func expectCredential(_ entry: [String: Any], app: String, _ context: String) {
        switch app {
        case "acme": #expect(entry["auth"] as? String == "token" && entry["jwt_kid"] as? String == keyA && entry["jwt_iss"] as? String == teamA, "\(context): \(entry)")
        case "beta": #expect(entry["auth"] as? String == "token" && entry["jwt_kid"] as? String == keyB && entry["jwt_iss"] as? String == teamB, "\(context): \(entry)")
        default:
            #expect(entry["auth"] as? String == "certificate" && (entry["jwt_kid"] as? String) == nil && (entry["client_cn"] as? String)?.isEmpty == false
                    && (entry["headers"] as? [String: String])?["authorization"] == nil, "\(context): \(entry)")
        }
    }

    /// Two channels per app and environment, made with `herald channels create --app`.
    func createChannels(_ world: World, _ job: JobFile) throws -> [String: [String: [String]]] {
        var made: [String: [String: [String]]] = [:]
        for app in Self.apps {
            for environment in Self.environments {
                for _ in 0..<2 {
                    let r = try channels(world, job, "create", app: app, environment: environment, ["--json"])
                    #expect(r.status == 0, "\(app) \(environment): \(r.stdout)\(r.stderr)")
                    let created = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout)")
                    #expect(created["app"] as? String == app && created["bundle_id"] as? String == Self.topics[app], "\(created)")
                    made[app, default: [:]][environment, default: []].append(try #require(created["channel_id"] as? String))
                }
            }
        }
        return made
    }

    @Test func eachChannelGoesToItsOwnAppsPathOnItsEnvironmentWithItsAppsCredentials() throws {
        let world = try start()
        defer { world.stop() }
        // The audience is written once the channels exist (the same job file, rewritten).
        let manage = try job("matchday", world: world, rows: ["id,channel,app,env"]) {
            $0.audience.channelField = "channel"
            $0.audience.idField = "id"
            $0.audience.appField = "app"
            $0.audience.environmentField = "env"
        }
        let made = try createChannels(world, manage)

        // Each app lists only its own channels, per environment; the management requests used each app's credentials.
        for app in Self.apps {
            for environment in Self.environments {
                let r = try channels(world, manage, "list", app: app, environment: environment, ["--json"])
                let listed = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout)\(r.stderr)")
                #expect(listed["channels"] as? [String] == made[app]?[environment] && listed["app"] as? String == app
                        && listed["bundle_id"] as? String == Self.topics[app], "\(app) \(environment): \(listed)")
            }
        }
        for environment in Self.environments {
            let management = try world.sims[environment]!.entries().filter { ($0["path"] as? String)?.hasPrefix("/1/apps/") == true }
            #expect(management.count == Self.apps.count * 3, "\(environment): two creates and a list per app")
            for entry in management {
                let path = entry["path"] as? String ?? ""
                let app = try #require(Self.apps.first { path.hasPrefix("/1/apps/\(Self.topics[$0]!)/") }, "\(path)")
                Self.expectCredential(entry, app: app, "management \(environment)")
            }
        }

        // The audience: every channel under its app and environment, and acme's first production
        // channel named under beta too (another recipient; APNs does not know it for beta).
        var rows = ["id,channel,app,env"]
        var expected: [(id: String, channel: String, app: String, environment: String)] = []
        for app in Self.apps {
            for environment in Self.environments {
                for (i, channel) in (made[app]?[environment] ?? []).enumerated() {
                    expected.append(("\(app)-\(environment)-\(i)", channel, app, environment))
                }
            }
        }
        let foreign = (id: "wrong-app", channel: made["acme"]!["production"]![0], app: "beta", environment: "production")
        for row in expected + [foreign] { rows.append("\(row.id),\(row.channel),\(row.app),\(row.environment)") }
        let broadcast = try job("matchday", world: world, rows: rows) {
            $0.audience.channelField = "channel"
            $0.audience.idField = "id"
            $0.audience.appField = "app"
            $0.audience.environmentField = "env"
        }
        let r = try herald.run(broadcast, [], environment: env(world))
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")

        for environment in Self.environments {
            let log = try Self.broadcasts(world.sims[environment]!)
            let wanted = (expected + (foreign.environment == environment ? [foreign] : [])).filter { $0.environment == environment }
            // Each channel once, on its own app's path.
            let seen = log.map { "\($0["path"] as? String ?? "") \(Self.channel($0))" }.sorted()
            #expect(seen == wanted.map { "/4/broadcasts/apps/\(Self.topics[$0.app]!) \($0.channel)" }.sorted(), "\(environment)")
            for entry in log {
                let path = entry["path"] as? String ?? ""
                let app = try #require(Self.apps.first { path == "/4/broadcasts/apps/\(Self.topics[$0]!)" }, "\(path)")
                Self.expectCredential(entry, app: app, "broadcast \(environment)")
                let refused = app == foreign.app && Self.channel(entry) == foreign.channel
                #expect(entry["status"] as? Int == (refused ? 400 : 200) && entry["reason"] as? String == (refused ? "ChannelNotRegistered" : nil), "\(entry)")
            }
        }

        let deliveries = Dictionary(try broadcast.deliveries().map { ($0["recipient_id"] ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(deliveries.count == expected.count + 1)
        for row in expected {
            let d = deliveries[row.id]
            #expect(d?["status"] == "sent" && d?["channel_id"] == row.channel && d?["app"] == row.app && d?["environment"] == row.environment
                    && d?["token"] == "", "\(row.id): \(d ?? [:])")
        }
        let refused = deliveries[foreign.id]
        #expect(refused?["status"] == "failed" && refused?["reason"] == "ChannelNotRegistered" && refused?["http_status"] == "400"
                && refused?["app"] == "beta" && refused?["environment"] == "production", "\(refused ?? [:])")
    }

    @Test func channelsListedPerAppInTheJobGoToTheJobsEnvironment() throws {
        let world = try start()
        defer { world.stop() }
        let admin = try job("admin", world: world, rows: ["id,channel,app,env"]) { $0.audience.channelField = "channel"; $0.audience.appField = "app" }
        var made: [String: [String]] = [:]
        for app in Self.apps {
            for _ in 0..<2 {
                let r = try channels(world, admin, "create", app: app, environment: "production")
                #expect(r.status == 0, "\(r.stderr)")
                made[app, default: []].append(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        let listed = try job("listed", world: world) {
            $0.push.extra = "  broadcast:\n    channels:\n" + Self.apps.map { "      \($0): [\(made[$0]!.joined(separator: ", "))]" }.joined(separator: "\n")
        }
        let validate = try herald(["validate", listed.path], environment: env(world))
        #expect(validate.status == 0, "\(validate.stdout)\(validate.stderr)")
        let r = try herald.run(listed, [], environment: env(world))
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(try Self.broadcasts(world.sims["sandbox"]!).isEmpty, "listed channels go to the job's environment only")
        let log = try Self.broadcasts(world.sims["production"]!)
        #expect(log.map { "\($0["path"] as? String ?? "") \(Self.channel($0)) \($0["status"] as? Int ?? 0)" }.sorted()
                == Self.apps.flatMap { app in made[app]!.map { "/4/broadcasts/apps/\(Self.topics[app]!) \($0) 200" } }.sorted())
        for entry in log {
            let app = Self.apps.first { made[$0]!.contains(Self.channel(entry)) } ?? ""
            Self.expectCredential(entry, app: app, "listed")
        }
        let deliveries = try listed.deliveries()
        #expect(deliveries.count == 6 && deliveries.allSatisfy { $0["status"] == "sent" && $0["environment"] == "production" }, "\(deliveries)")
        #expect(Set(deliveries.map { "\($0["app"]!) \($0["channel_id"]!)" }) == Set(Self.apps.flatMap { app in made[app]!.map { "\(app) \($0)" } }))
    }

    /// `--app` is required with several apps and must name one; an environment `apns.endpoints`
    /// sends elsewhere needs `--channels-endpoint`; `--environment` takes production or sandbox.
    @Test func channelsCommandNeedsItsAppAndEnvironmentsHost() throws {
        let world = try start()
        defer { world.stop() }
        let job = try job("admin", world: world, rows: ["id,channel,app,env"]) { $0.audience.channelField = "channel"; $0.audience.appField = "app" }
        let missing = try herald(["channels", "list", job.path], environment: env(world))
        #expect(missing.status == 2 && missing.stderr.contains("the job has 3 apps (acme, beta, partner)") && missing.stderr.contains("--app"), "\(missing.stderr)")
        let unknown = try herald(["channels", "list", job.path, "--app", "gamma"], environment: env(world))
        #expect(unknown.status == 2 && unknown.stderr.contains("--app gamma is not one of apns.apps: acme, beta, partner"), "\(unknown.stderr)")
        let noHost = try herald(["channels", "list", job.path, "--app", "beta", "--environment", "sandbox"], environment: env(world))
        #expect(noHost.status == 2 && noHost.stderr.contains("apns.endpoints sends sandbox pushes to \(world.sims["sandbox"]!.url)")
                && noHost.stderr.contains("--channels-endpoint"), "\(noHost.stderr)")
        let badEnvironment = try herald(["channels", "list", job.path, "--app", "beta", "--environment", "staging"], environment: env(world))
        #expect(badEnvironment.status == 2 && badEnvironment.stderr.contains("--environment must be production or sandbox"), "\(badEnvironment.stderr)")
        // Another app's certificate password need not be set to manage beta's channels.
        let beta = try herald(["channels", "list", job.path, "--app", "beta"])
        #expect(beta.status == 0 && beta.stdout == "\n", "\(beta.stdout)\(beta.stderr)")
        #expect(try world.sims["sandbox"]!.entries().isEmpty, "nothing was asked of the sandbox")
    }
}
