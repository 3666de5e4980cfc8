import Foundation
import HeraldSimulator
import HeraldTestSupport
import Testing

/// Many apps in one campaign (docs/many-apps.md), against two `herald sim` processes standing for
/// APNs production and sandbox, each serving two developer teams' keys and a client-certificate
/// CA on one port: each recipient reaches its own topic on its own environment with its own
/// credentials, one connection pool per team, certificate and environment; one app's key refused
/// stops that app only; a SIGKILL loses nobody; the environment fallback moves a sandbox token once
/// and the next campaign sends it there directly.
@Suite(.serialized) struct ManyAppsRunTests {
    let dir = TemporaryDirectory("e2e-apps")
    let herald = Herald()

    static let teamA = "TEAMAAAAAA", keyA = "KEYAAAAAAA"
    static let teamB = "TEAMBBBBBB", keyB = "KEYBBBBBBB"
    static let topics = ["acme": "com.acme.app", "acme-ipad": "com.acme.ipad", "beta": "com.beta.app", "partner": "com.partner.app"]

    /// One audience row.
    struct Row: Hashable {
        var id: String, token: String, app: String, environment: String
    }

    /// The two simulators and the credentials the job's apps use.
    struct World {
        let production: SimulatorProcess
        let sandbox: SimulatorProcess
        /// Both simulators' CAs, as one PEM bundle (`apns.ca_file`).
        let caFile: String
        let keyAFile: String
        let keyBFile: String
        let certificate: ClientCertificateFiles
        /// Each simulator's own directory (its CA and keys), kept as long as the simulators run.
        let simDirs: [TemporaryDirectory]

        func stop() { production.stop(); sandbox.stop() }
    }

    /// Team A's key serves acme and acme-ipad, team B's beta, certificates partner; `trustedB`: the
    /// key the simulators verify team B's tokens with (another than the job's: InvalidProviderToken).
    func start(_ name: String, trustedB: TestKey? = nil, production: [String] = [], sandbox: [String] = []) throws -> World {
        let keyA = TestKey(), keyB = TestKey()
        let ca = try SimulatorCertificateAuthority(commonName: "e2e apps client CA")
        var sims: [SimulatorProcess] = []
        var simDirs: [TemporaryDirectory] = []
        try FileManager.default.createDirectory(atPath: dir.file("sim-\(name)"), withIntermediateDirectories: true)
        for (environment, extra) in [("production", production), ("sandbox", sandbox)] {
            let simDir = TemporaryDirectory("e2e-apps-\(name)-\(environment)")
            simDirs.append(simDir)
            let arguments = try SimulatorProcess.tokenKeyArguments(keyA, teamId: Self.teamA, keyId: Self.keyA,
                                                                   bundleIds: ["com.acme.app", "com.acme.ipad"], in: simDir)
                + SimulatorProcess.tokenKeyArguments(trustedB ?? keyB, teamId: Self.teamB, keyId: Self.keyB, bundleIds: ["com.beta.app"], in: simDir)
                + SimulatorProcess.clientCAArguments(ca, bundleIds: ["com.partner.app"], in: simDir) + extra
            sims.append(try SimulatorProcess(in: simDir, bundleId: nil, log: dir.file("sim-\(name)/\(environment).ndjson"), arguments: arguments))
        }
        let bundle = try String(contentsOfFile: sims[0].caFile, encoding: .utf8) + (try String(contentsOfFile: sims[1].caFile, encoding: .utf8))
        let keyAFile = try dir.write("keys/\(name)-A.p8", keyA.privateKeyPEM)
        let keyBFile = try dir.write("keys/\(name)-B.p8", keyB.privateKeyPEM)
        chmod(keyAFile, 0o600)
        chmod(keyBFile, 0o600)
        return World(production: sims[0], sandbox: sims[1], caFile: try dir.write("keys/\(name)-ca.pem", bundle), keyAFile: keyAFile,
                     keyBFile: keyBFile, certificate: try ClientCertificateFiles(issuedBy: ca, name: "partner-\(name)", in: dir), simDirs: simDirs)
    }

    /// `count` rows spread over the four apps and both environments, tokens distinct, plus token 1
    /// again under beta (another recipient: another app) and again under acme (a duplicate).
    static func rows(_ count: Int) -> [Row] {
        let apps = ["acme", "acme", "acme-ipad", "beta", "partner"]
        var rows = (1...count).map { i in
            Row(id: "u\(i)", token: String(format: "%064x", 0xA000_0000 + i), app: apps[i % apps.count], environment: i % 3 == 0 ? "sandbox" : "production")
        }
        rows.append(Row(id: "u1-beta", token: rows[0].token, app: "beta", environment: "production"))
        rows.append(Row(id: "u1-again", token: rows[0].token, app: rows[0].app, environment: rows[0].environment))
        return rows
    }

    func writeJob(_ name: String, world: World, rows: [Row], environmentField: Bool = true, keyBFile: String? = nil,
                  _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TestJob(name, rows: ["id,token,app,env"] + rows.map { "\($0.id),\($0.token),\($0.app),\(environmentField ? $0.environment : "")" }) {
            $0.audience.idField = "id"
            $0.audience.appField = "app"
            $0.audience.environmentField = environmentField ? "env" : nil
            $0.apns.endpoint = "production"
            $0.apns.endpoints = "{ production: \"\(world.production.url)\", sandbox: \"\(world.sandbox.url)\" }"
            $0.apns.caFile = world.caFile
            $0.apns.streamsPerConnection = 20
            $0.apns.apps = [
                "{ name: acme, topic: com.acme.app, auth: { team_id: \(Self.teamA), key_id: \(Self.keyA), key_file: \"\(world.keyAFile)\" } }",
                "{ name: acme-ipad, topic: com.acme.ipad, auth: { team_id: \(Self.teamA), key_id: \(Self.keyA), key_file: \"\(world.keyAFile)\" } }",
                "{ name: beta, topic: com.beta.app, auth: { team_id: \(Self.teamB), key_id: \(Self.keyB), key_file: \"\(keyBFile ?? world.keyBFile)\" } }",
                "{ name: partner, topic: com.partner.app, certificate: { p12_file: \"\(world.certificate.p12)\", password_env: HERALD_TEST_P12_PASSWORD } }",
            ]
            $0.retry.maxAttempts = 3
            configure(&$0)
        }.write(in: dir)
    }

    func run(_ job: JobFile, world: World, _ arguments: [String] = []) throws -> RunResult {
        try herald.run(job, arguments, environment: ["HERALD_TEST_P12_PASSWORD": world.certificate.password])
    }

    /// A simulator's push requests (not the certificate probe), one object each.
    func pushes(_ sim: SimulatorProcess) throws -> [[String: Any]] {
        try sim.entries().filter { ($0["path"] as? String)?.hasPrefix("/3/device/") == true }
    }

    static func byId(_ rows: [[String: String]]) -> [String: [String: String]] {
        Dictionary(rows.map { ($0["recipient_id"] ?? "", $0) }, uniquingKeysWith: { a, _ in a })
    }

    // MARK: every recipient on its own topic, environment and credentials

    @Test func eachRecipientReachesItsTopicOnItsEnvironmentWithItsAppsCredentials() throws {
        let world = try start("all")
        defer { world.stop() }
        let rows = Self.rows(120)
        let recipients = Array(rows.dropLast())   // the last row is a duplicate
        let job = try writeJob("all", world: world, rows: rows) { $0.events = "{ file: ../out/all-events.ndjson }" }

        // validate counts each app's rows per environment; preview shows each row's app, topic and endpoint.
        let validate = try herald(["validate", job.path, "--json"], environment: ["HERALD_TEST_P12_PASSWORD": world.certificate.password])
        #expect(validate.status == 0, "\(validate.stdout)\(validate.stderr)")
        let scan = try #require(try JSONSerialization.jsonObject(with: Data(validate.stdout.utf8)) as? [String: Any])
        let scanned = try #require(scan["apps"] as? [[String: Any]])
        #expect(scanned.map { $0["app"] as? String ?? "" } == ["acme", "acme-ipad", "beta", "partner"])
        for entry in scanned {
            let app = entry["app"] as? String ?? ""
            #expect(entry["topic"] as? String == Self.topics[app])
            #expect(entry["production"] as? Int == rows.filter { $0.app == app && $0.environment == "production" }.count, "\(entry)")
            #expect(entry["sandbox"] as? Int == rows.filter { $0.app == app && $0.environment == "sandbox" }.count, "\(entry)")
            #expect(entry["distinct"] as? Int == Set(rows.filter { $0.app == app }.map(\.token)).count, "\(entry)")
        }
        let preview = try herald(["preview", job.path, "-n", "3"])
        #expect(preview.status == 0, "\(preview.stdout)\(preview.stderr)")
        for row in rows.prefix(3) {
            let url = row.environment == "sandbox" ? world.sandbox.url : world.production.url
            #expect(preview.stdout.contains("app       \(row.app), topic \(Self.topics[row.app]!), \(row.environment) \(url)"), "\(preview.stdout)")
        }
        #expect(preview.stdout.contains("apns-topic: \(Self.topics[rows[2].app]!)"), "\(preview.stdout)")

        let metrics = dir.file("out/all.prom")
        let r = try run(job, world: world, ["--metrics-file", metrics])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")

        for (sim, environment) in [(world.production, "production"), (world.sandbox, "sandbox")] {
            let log = try pushes(sim)
            let expected = recipients.filter { $0.environment == environment }
            // Each recipient once, with its app's topic (apns-topic for an alert is the bundle id).
            let seen = log.map { "\($0["token"] as? String ?? "") \($0["topic"] as? String ?? "")" }.sorted()
            #expect(seen == expected.map { "\($0.token) \(Self.topics[$0.app]!)" }.sorted(), "\(environment)")
            #expect(log.allSatisfy { ($0["status"] as? Int) == 200 }, "\(log.filter { ($0["status"] as? Int) != 200 }.prefix(2))")
            // Each app's own credentials.
            for entry in log {
                let topic = entry["topic"] as? String ?? ""
                switch topic {
                case "com.acme.app", "com.acme.ipad":
                    #expect(entry["auth"] as? String == "token" && entry["jwt_kid"] as? String == Self.keyA && entry["jwt_iss"] as? String == Self.teamA)
                case "com.beta.app":
                    #expect(entry["auth"] as? String == "token" && entry["jwt_kid"] as? String == Self.keyB && entry["jwt_iss"] as? String == Self.teamB)
                default:
                    #expect(topic == "com.partner.app" && entry["auth"] as? String == "certificate" && (entry["jwt_kid"] as? String) == nil
                            && ((entry["headers"] as? [String: Any]) ?? [:])["authorization"] == nil, "\(entry)")
                }
            }
            // One pool per team, certificate and environment, each of one connection: team A's
            // two apps share theirs.
            var connections: [String: Set<Int>] = [:]
            for entry in log {
                let credential = entry["auth"] as? String == "certificate" ? "certificate" : entry["jwt_kid"] as? String ?? "?"
                connections[credential, default: []].insert(entry["connection"] as? Int ?? -1)
            }
            #expect(connections.mapValues(\.count) == [Self.keyA: 1, Self.keyB: 1, "certificate": 1], "\(environment): \(connections)")
            #expect(Set(connections.values.flatMap { $0 }).count == 3, "\(environment): three connections, one per pool")
        }

        // Reports and events say each recipient's app and environment.
        let deliveries = Self.byId(try job.deliveries())
        #expect(deliveries.count == recipients.count)
        for row in recipients {
            let d = deliveries[row.id]
            #expect(d?["status"] == "sent" && d?["app"] == row.app && d?["environment"] == row.environment && d?["token"] == row.token, "\(row.id): \(d ?? [:])")
        }
        let events = try JSON.lines(job.resolve("../out/all-events.ndjson"))
        #expect(events.count == recipients.count)
        for e in events {
            let id = e["recipient_id"] as? String ?? ""
            let row = recipients.first { $0.id == id }
            #expect(e["app"] as? String == row?.app && e["environment"] as? String == row?.environment, "\(e)")
        }
        let summary = try job.summary()
        let counts = try job.counts()
        #expect(counts["duplicates"] as? Int == 1 && counts["sent"] as? Int == recipients.count, "\(counts)")
        let apps = try #require(summary["apps"] as? [[String: Any]])
        for entry in apps {
            let app = entry["app"] as? String ?? "", environment = entry["environment"] as? String ?? ""
            let expected = recipients.filter { $0.app == app && $0.environment == environment }.count
            #expect(entry["recipients"] as? Int == expected && (entry["counts"] as? [String: Int])?["sent"] == expected, "\(entry)")
        }
        #expect(apps.count == 8, "four apps in two environments")
        let page = try String(contentsOfFile: job.report("summary.html"), encoding: .utf8)
        #expect(["acme", "acme-ipad", "beta", "partner"].allSatisfy { page.contains("<table id=\"app-\($0)\">") && page.contains("id=\"app-\($0)-sandbox\"") })
        let prom = try String(contentsOfFile: metrics, encoding: .utf8)
        let betaProduction = recipients.filter { $0.app == "beta" && $0.environment == "production" }.count
        #expect(prom.contains("app=\"beta\",environment=\"production\",status=\"sent\"} \(betaProduction)\n"), "\(prom)")
        let status = try herald(["status", job.path])
        let acmeSandbox = recipients.filter { $0.app == "acme" && $0.environment == "sandbox" }.count
        #expect(status.stdout.contains("app       acme sandbox: \(acmeSandbox) recipients: \(acmeSandbox) sent"), "\(status.stdout)")
        // A second run sends nothing.
        let again = try run(job, world: world)
        #expect(again.status == 0 && (again.stdout + again.stderr).contains("already finished"), "\(again.stdout)\(again.stderr)")
        let requests = try pushes(world.production).count + pushes(world.sandbox).count
        #expect(requests == recipients.count)
    }

    // MARK: shards and report --merge

    @Test func shardsKeepEachRecipientsAppAndTheMergedReportsAddUp() throws {
        let world = try start("shards")
        defer { world.stop() }
        let rows = Self.rows(200)
        let recipients = Array(rows.dropLast())
        let job = try writeJob("shards", world: world, rows: rows)
        for k in 0..<2 {
            let r = try run(job, world: world, ["--shard", "\(k)/2"])
            #expect(r.status == 0, "shard \(k): \(r.stdout)\(r.stderr)")
        }
        let sent = try (pushes(world.production) + pushes(world.sandbox)).map { "\($0["token"] as? String ?? "") \($0["topic"] as? String ?? "")" }
        #expect(sent.sorted() == recipients.map { "\($0.token) \(Self.topics[$0.app]!)" }.sorted(), "the shards together sent each recipient once")
        let out = dir.file("reports/shards-merged")
        let merged = try herald(["report", "--merge", dir.file("reports/shards-shard-0-of-2"), dir.file("reports/shards-shard-1-of-2"), "--out", out])
        #expect(merged.status == 0, "\(merged.stdout)\(merged.stderr)")
        let deliveries = Self.byId(try CSV.rows(out + "/deliveries.csv"))
        #expect(deliveries.count == recipients.count)
        #expect(recipients.allSatisfy { deliveries[$0.id]?["app"] == $0.app && deliveries[$0.id]?["environment"] == $0.environment })
        let apps = try #require(try JSON.object(out + "/summary.json")["apps"] as? [[String: Any]])
        for entry in apps {
            let app = entry["app"] as? String ?? "", environment = entry["environment"] as? String ?? ""
            #expect(entry["recipients"] as? Int == recipients.filter { $0.app == app && $0.environment == environment }.count, "\(entry)")
        }
        #expect(apps.count == 8)
    }

    // MARK: one app's key refused

    @Test func aRefusedKeyStopsItsAppOnlyAndAFixedKeySendsJustThatApp() throws {
        let replacement = TestKey()
        let world = try start("refused", trustedB: replacement)
        defer { world.stop() }
        let rows = Array(Self.rows(60).dropLast(2))
        let job = try writeJob("refused", world: world, rows: rows)
        let r = try run(job, world: world)
        #expect(r.status == 3, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("app beta") && r.stderr.contains("InvalidProviderToken"), "\(r.stderr)")
        var deliveries = Self.byId(try job.deliveries())
        for row in rows {
            let status = deliveries[row.id]?["status"]
            #expect(status == (row.app == "beta" ? "pending" : "sent"), "\(row.id) \(row.app): \(status ?? "-")")
        }
        let firstRequests = try pushes(world.production).count + pushes(world.sandbox).count

        // The operator fixes beta's key: only beta's recipients are sent.
        let fixedKey = try dir.write("keys/refused-B2.p8", replacement.privateKeyPEM)
        chmod(fixedKey, 0o600)
        let fixed = try writeJob("refused", world: world, rows: rows, keyBFile: fixedKey)
        let again = try run(fixed, world: world)
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        deliveries = Self.byId(try fixed.deliveries())
        #expect(rows.allSatisfy { deliveries[$0.id]?["status"] == "sent" })
        let sent = try (pushes(world.production) + pushes(world.sandbox)).filter { ($0["status"] as? Int) == 200 }
        let tokens = sent.map { "\($0["token"] as? String ?? "") \($0["topic"] as? String ?? "")" }
        #expect(Set(tokens).count == tokens.count, "nobody got it twice")
        let requests = try pushes(world.production).count + pushes(world.sandbox).count
        #expect(requests - firstRequests == rows.filter { $0.app == "beta" }.count)
    }

    // MARK: one app's wrong-environment storm

    @Test func aWrongEnvironmentStormInOneAppStopsThatAppOnly() throws {
        // Every beta token is refused by production (a sandbox build's list sent to production).
        let world = try start("storm", production: ["--bad-token-prefix", "be"])
        defer { world.stop() }
        let rows = (1...60).map { i in
            Row(id: "u\(i)", token: (i % 2 == 0 ? "be" : "ac") + String(format: "%062x", i), app: i % 2 == 0 ? "beta" : "acme", environment: "production")
        }
        let job = try writeJob("storm", world: world, rows: rows)
        let r = try run(job, world: world)
        #expect(r.status == 3, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("app beta") && r.stderr.contains("BadDeviceToken"), "\(r.stderr)")
        let deliveries = Self.byId(try job.deliveries())
        for row in rows {
            // The storm's answers are held back, not recorded as failures: fixing the job sends them.
            #expect(deliveries[row.id]?["status"] == (row.app == "beta" ? "pending" : "sent"), "\(row.id): \(deliveries[row.id] ?? [:])")
        }
    }

    // MARK: SIGKILL

    @Test func aSigkillMidSendLosesNobody() throws {
        let world = try start("kill", production: ["--latency-ms", "20"], sandbox: ["--latency-ms", "20"])
        defer { world.stop() }
        let rows = Self.rows(900)
        let recipients = Array(rows.dropLast())   // the last row is a duplicate
        let job = try writeJob("kill", world: world, rows: rows) { $0.throttle.rate = 400 }
        let p = try herald.start(["run", job.path], environment: ["HERALD_TEST_P12_PASSWORD": world.certificate.password])
        waitUntil(timeout: 60, pollInterval: 0.02) {
            RequestLog.lineCount(world.production.log) + RequestLog.lineCount(world.sandbox.log) >= 300 || !p.process.isRunning
        }
        kill(p.pid, SIGKILL)
        p.process.waitUntilExit()
        #expect(p.process.terminationReason == .uncaughtSignal, "killed, not finished")
        let r = try run(job, world: world)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let deliveries = Self.byId(try job.deliveries())
        #expect(recipients.allSatisfy { deliveries[$0.id]?["status"] == "sent" && deliveries[$0.id]?["app"] == $0.app })
        // Every recipient reached APNs; one sent twice is one whose answer the kill cut off, resent
        // with the same apns-id (at most the window in flight).
        var byRecipient: [String: [String]] = [:]
        for entry in try pushes(world.production) + pushes(world.sandbox) where (entry["status"] as? Int) == 200 {
            byRecipient["\(entry["token"] as? String ?? "") \(entry["topic"] as? String ?? "")", default: []].append(entry["apns_id"] as? String ?? "")
        }
        #expect(byRecipient.count == recipients.count)
        let twice = byRecipient.filter { $0.value.count > 1 }
        #expect(twice.allSatisfy { Set($0.value).count == 1 }, "a resend keeps its apns-id")
        // Six pools of one connection and 20 streams: a window of 120, and at most twice a claim's worth ahead of it.
        #expect(twice.count <= 240, "at most what was claimed and not recorded: \(twice.count)")
    }

    // MARK: environment fallback

    @Test func aSandboxTokenInTheProductionListGoesToSandboxOnceAndDirectlyNextTime() throws {
        // Production refuses tokens starting 5a (sandbox builds' tokens); both refuse those starting dd.
        let world = try start("fallback", production: ["--bad-token-prefix", "5a", "--bad-token-prefix", "dd"], sandbox: ["--bad-token-prefix", "dd"])
        defer { world.stop() }
        var rows = (1...40).map { i in Row(id: "u\(i)", token: String(format: "%064x", 0xB000_0000 + i), app: i % 2 == 0 ? "acme" : "beta", environment: "") }
        for i in 0..<6 { rows[i].token = "5a" + rows[i].token.dropFirst(2) }
        rows[10].token = "dd" + rows[10].token.dropFirst(2)
        let sandboxTokens = Set(rows[0..<6].map(\.token))
        func job(_ campaign: String) throws -> JobFile {
            try writeJob(campaign, world: world, rows: rows, environmentField: false) {
                $0.apns.environmentFallback = true
            }
        }
        let first = try job("fallback-1")
        let r = try run(first, world: world)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        var production = try pushes(world.production), sandbox = try pushes(world.sandbox)
        for token in sandboxTokens {
            #expect(production.filter { $0["token"] as? String == token }.map { $0["reason"] as? String } == ["BadDeviceToken"])
            #expect(sandbox.filter { $0["token"] as? String == token }.map { $0["status"] as? Int } == [200])
        }
        #expect(sandbox.filter { $0["token"] as? String == rows[10].token }.map { $0["reason"] as? String } == ["BadDeviceToken"],
                "tried once in the other environment, then failed")
        #expect(sandbox.count == sandboxTokens.count + 1, "no other token went to sandbox")
        let deliveries = Self.byId(try first.deliveries())
        for row in rows {
            let d = deliveries[row.id] ?? [:]
            if sandboxTokens.contains(row.token) {
                #expect(d["status"] == "sent" && d["environment"] == "sandbox" && d["attempts"] == "2", "\(d)")
            } else if row.token.hasPrefix("dd") {
                #expect(d["status"] == "failed" && d["reason"] == "BadDeviceToken" && d["environment"] == "sandbox", "\(d)")
            } else {
                #expect(d["status"] == "sent" && d["environment"] == "production" && d["attempts"] == "1", "\(d)")
            }
        }

        // The next campaign sends the moved tokens straight to sandbox.
        let (productionBefore, sandboxBefore) = (production.count, sandbox.count)
        let second = try job("fallback-2")
        let again = try run(second, world: world)
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        production = Array(try pushes(world.production).dropFirst(productionBefore))
        sandbox = Array(try pushes(world.sandbox).dropFirst(sandboxBefore))
        #expect(Set(sandbox.compactMap { $0["token"] as? String }).isSuperset(of: sandboxTokens))
        #expect(production.allSatisfy { !sandboxTokens.contains($0["token"] as? String ?? "") }, "not tried in production again")
        let next = Self.byId(try second.deliveries())
        #expect(rows[0..<6].allSatisfy { next[$0.id]?["environment"] == "sandbox" && next[$0.id]?["attempts"] == "1" && next[$0.id]?["status"] == "sent" })
    }
}
