import ArgumentParser
import Dispatch
import Foundation
import HeraldCore
import HeraldSimulator

/// `herald sim`: parse, check, start `APNsSimulator`, wait for a signal. Numbers are read as text
/// and checked here so that every bad value is one line on stderr and exit 2, like `herald run`'s
/// configuration errors (argument-parser's own errors print usage and exit 64).
struct SimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sim",
        abstract: "Run the APNs simulator: HTTP/2 over TLS, validating requests like Apple and injecting faults.",
        discussion: """
            Prints one line `listening on https://HOST:PORT` when ready. Stops cleanly on SIGINT or SIGTERM \
            and then, with --log, appends a final stats line ({"stats":{…}}). Bad configuration (unreadable \
            file, port in use, malformed value) prints one line on stderr and exits 2.

            Checks, first failing one decides: path (404 BadPath, 400 MissingDeviceToken), method (405), \
            duplicate headers, provider token (403 MissingProviderToken, InvalidProviderToken, \
            ExpiredProviderToken; 429 TooManyProviderTokenUpdates), device token (BadDeviceToken), \
            apns-topic (MissingTopic, TopicDisallowed, BadTopic), apns-push-type (InvalidPushType), \
            apns-priority (BadPriority), apns-id (BadMessageId), apns-expiration (BadExpirationDate), \
            apns-collapse-id (BadCollapseId), body (PayloadEmpty, 413 PayloadTooLarge, BadPayload). \
            A valid request then meets the random faults (--p429/--p500/--p503), then the token \
            rules (answer, unregistered, expired, bad, not-for-topic, flaky; first match), else 200.

            Several apps on one port, as at Apple: one --token-key per team key, each limited to its \
            apps, and --client-ca with --client-ca-bundle for certificate clients. A topic the \
            credential is not for gets 400 TopicDisallowed; a token of another team on a connection \
            that used one team's, 403 UnrelatedKeyIdInToken.
            """
    )

    @OptionGroup(title: "Listening") var listen: SimListenOptions
    @OptionGroup(title: "Authentication") var auth: SimAuthOptions
    @OptionGroup(title: "Device-token rules (hex prefixes; a whole token works too; repeatable)") var rules: SimTokenRuleOptions
    @OptionGroup(title: "Faults (seeded: the same seed gives the same faults)") var faults: SimFaultOptions

    func run() throws {
        do {
            let config = try makeConfiguration()
            // Before the `listening on` line: a script may signal as soon as it reads it.
            let stopSignal = StopSignal()
            let sim = try APNsSimulator.start(config)
            if let caOut = listen.caOut {
                let fd = open(caOut, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o644)
                guard fd >= 0 else {
                    try? sim.shutdown()
                    throw SimCommandError("cannot write --ca-out \(caOut): \(String(cString: strerror(errno)))")
                }
                FileHandle(fileDescriptor: fd, closeOnDealloc: true).write(Data(sim.caCertificatePEM.utf8))
            }
            let shownHost = listen.host.contains(":") ? "[\(listen.host)]" : listen.host
            FileHandle.standardOutput.write(Data("listening on https://\(shownHost):\(sim.port)\n".utf8))
            if let management = sim.managementPort {
                FileHandle.standardOutput.write(Data("channel management on https://\(shownHost):\(management)\n".utf8))
            }
            stopSignal.wait()
            try sim.shutdown(writingStatsLine: true)
            let counts = sim.requestLog.statusCounts().sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
            FileHandle.standardOutput.write(Data("stopped after \(sim.requestLog.count) requests (\(counts))\n".utf8))
        } catch {
            FileHandle.standardError.write(Data("herald: error: \(error)\n".utf8))
            throw ExitCode(2)
        }
    }

    func makeConfiguration() throws -> SimulatorConfiguration {
        var config = SimulatorConfiguration(authentication: try auth.authentication())
        config.host = listen.host
        config.port = try SimFlag.int("--port", listen.port, range: 0...65_535)
        if (listen.cert == nil) != (listen.key == nil) { throw SimCommandError("--cert and --key go together") }
        if let cert = listen.cert, let key = listen.key { config.tls = .files(certificatePEMPath: cert, privateKeyPEMPath: key) }
        config.threads = try SimFlag.int("--threads", listen.threads, range: 0...256)
        if let management = listen.managementPort {
            config.managementPort = try SimFlag.int("--management-port", management, range: 0...65_535)
        }
        config.channelLimit = try SimFlag.int("--channel-limit", listen.channelLimit, range: 0...1_000_000)
        config.bundleId = auth.bundleId
        config.logPath = listen.log
        // A long-running simulator keeps counters, not every request, in memory.
        config.keepsEntriesInMemory = false
        config.jwtMaxAgeSeconds = try SimFlag.int("--jwt-max-age", auth.jwtMaxAge, range: 0...Int(Int32.max))
        config.tokenUpdateIntervalSeconds = try SimFlag.int("--token-update-interval", auth.tokenUpdateInterval, range: 0...Int(Int32.max))
        config.maxConcurrentStreams = try SimFlag.int("--max-concurrent-streams", faults.maxConcurrentStreams, range: 1...Int(Int32.max))
        config.tokenRules = try rules.tokenRules()
        config.faults = try faults.faults()
        return config
    }
}

struct SimListenOptions: ParsableArguments {
    @Option(help: "Address to bind.") var host = "127.0.0.1"
    @Option(parsing: .unconditional, help: "Port to bind; 0 picks a free one (the `listening on` line shows it).") var port = "8443"
    @Option(help: ArgumentHelp("Server certificate (PEM, leaf first). Without --cert/--key a CA and a certificate for localhost, 127.0.0.1, ::1 and --host are generated.", valueName: "server.pem"))
    var cert: String?
    @Option(help: ArgumentHelp("Server private key (PEM), with --cert.", valueName: "server.key")) var key: String?
    @Option(name: .customLong("ca-out"), help: ArgumentHelp("Write the PEM clients must trust (the generated CA, or --cert) to this file, for `herald run --ca-file`.", valueName: "ca.pem"))
    var caOut: String?
    @Option(help: ArgumentHelp("Append one NDJSON line per request (connection, stream, token, apns-* headers, JWT kid/iss/iat, body, answer) to this file, flushed per line, and a stats line at exit.", valueName: "requests.ndjson"))
    var log: String?
    @Option(parsing: .unconditional, help: "Event-loop threads; 0 means one per core.") var threads = "0"
    @Option(name: .customLong("management-port"), parsing: .unconditional,
            help: ArgumentHelp("Also serve the broadcast channel management API on this port (Apple's: 2195 sandbox, 2196 production; 0 picks a free one), sharing its channels with /4/broadcasts on --port.", valueName: "port"))
    var managementPort: String?
    @Option(name: .customLong("channel-limit"), parsing: .unconditional, help: "Channels per app before CannotCreateChannelConfig (Apple: 10,000).")
    var channelLimit = "10000"
}

struct SimAuthOptions: ParsableArguments {
    @Option(name: .customLong("team-id"), help: "Provider tokens must carry this Team ID as iss.") var teamId: String?
    @Option(name: .customLong("key-id"), help: "Provider tokens must carry this Key ID as kid.") var keyId: String?
    @Option(name: .customLong("auth-key"), help: ArgumentHelp("The .p8 key whose public half verifies provider-token signatures.", valueName: "AuthKey_K.p8"))
    var authKey: String?
    @Option(name: .customLong("auth-public-key"), help: ArgumentHelp("Or the public key (PEM) that verifies them.", valueName: "pub.pem"))
    var authPublicKey: String?
    @Option(name: .customLong("token-key"), help: ArgumentHelp("A team's provider-token key, for several teams and apps on one port (repeatable): tokens whose kid is KEY must carry TEAM as iss and verify with the key in the file (a .p8 private key or a PEM public key; the path must not contain ':'); with bundle ids, its tokens may send only to those apps (any other topic: 400 TopicDisallowed), without, to any topic.", valueName: "TEAM:KEY:path.pem[:bundle[,bundle…]]"))
    var tokenKeys: [String] = []
    @Option(name: .customLong("client-ca"), help: ArgumentHelp("Certificate authentication: clients present a TLS certificate issued by a CA in this PEM file, and their authorization headers are ignored. Alone, every connection must present one; with --token-key, a connection presents a certificate or sends provider tokens.", valueName: "ca.pem"))
    var clientCA: String?
    @Option(name: .customLong("client-ca-bundle"), help: ArgumentHelp("An app (bundle id) the --client-ca certificates may send to (repeatable); any other topic on a certificate connection: 400 TopicDisallowed. Without it, any topic.", valueName: "bundle"))
    var clientCABundles: [String] = []
    @Option(name: .customLong("bundle-id"), help: "apns-topic must be this bundle id plus the push type's suffix (another app's topic: TopicDisallowed; wrong suffix: BadTopic).")
    var bundleId: String?
    @Option(name: .customLong("jwt-max-age"), parsing: .unconditional, help: ArgumentHelp("Provider tokens whose iat is older than this many seconds get 403 ExpiredProviderToken.", valueName: "seconds"))
    var jwtMaxAge = "3600"
    @Option(name: .customLong("token-update-interval"), parsing: .unconditional, help: ArgumentHelp("A connection that changes its provider token sooner than this many seconds after the last change gets 429 TooManyProviderTokenUpdates.", valueName: "seconds"))
    var tokenUpdateInterval = "1200"

    func authentication() throws -> SimulatorAuthentication {
        let singleKeyFlags = teamId != nil || keyId != nil || authKey != nil || authPublicKey != nil
        if clientCA == nil && !clientCABundles.isEmpty { throw SimCommandError("--client-ca-bundle needs --client-ca") }
        if clientCA != nil && singleKeyFlags {
            throw SimCommandError("--client-ca (certificate authentication) excludes --team-id, --key-id, --auth-key and --auth-public-key: give the key as --token-key TEAM:KEY:path to combine them")
        }
        var keys = try tokenKeys.map(Self.tokenKey)
        if singleKeyFlags || (keys.isEmpty && clientCA == nil) { keys.insert(try singleKey(), at: 0) }
        var seen = Set<String>()
        for key in keys where !seen.insert(key.keyId).inserted {
            throw SimCommandError("--token-key: key id \(key.keyId) is given twice (a token's kid must name one key)")
        }
        let bundles = try clientCABundles.map { try Self.bundleId("--client-ca-bundle", $0) }
        // The single-credential forms stay what they were.
        if let clientCA, keys.isEmpty, bundles.isEmpty { return .clientCertificate(caPEMPath: clientCA) }
        if clientCA == nil, tokenKeys.isEmpty, let key = keys.first {
            return .providerToken(teamId: key.teamId, keyId: key.keyId, publicKeyPEM: key.publicKeyPEM)
        }
        return .credentials(tokenKeys: keys, clientCertificates: clientCA.map { SimulatorClientCertificates(caPEMPath: $0, bundleIds: bundles) })
    }

    /// The key of --team-id, --key-id and --auth-key or --auth-public-key: any topic.
    private func singleKey() throws -> SimulatorTokenKey {
        guard let teamId, let keyId else { throw SimCommandError("give --team-id and --key-id (or --client-ca for certificate authentication)") }
        let publicPEM: String
        switch (authKey, authPublicKey) {
        case (let path?, nil):
            publicPEM = try SimulatorCredentials.publicKeyPEM(fromPrivateKeyPEM: try SimFlag.readFile("--auth-key", path))
        case (nil, let path?):
            publicPEM = try SimFlag.readFile("--auth-public-key", path)
        default:
            throw SimCommandError("give exactly one of --auth-key or --auth-public-key")
        }
        return SimulatorTokenKey(teamId: teamId, keyId: keyId, publicKeyPEM: publicPEM)
    }

    /// `TEAM:KEY:path.pem[:bundle[,bundle…]]`. Messages name the flag and the team and key, never
    /// the file's content.
    static func tokenKey(_ spec: String) throws -> SimulatorTokenKey {
        let syntax = "--token-key must be TEAM:KEY:path.pem[:bundle[,bundle…]], not \"\(spec)\""
        let parts = spec.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard (3...4).contains(parts.count), !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else { throw SimCommandError(syntax) }
        let (team, key, path) = (parts[0], parts[1], parts[2])
        guard team.allSatisfy({ $0.isLetter || $0.isNumber }), key.allSatisfy({ $0.isLetter || $0.isNumber }) else {
            throw SimCommandError("--token-key \(spec): the team id and the key id are letters and digits")
        }
        var bundles: [String] = []
        if parts.count == 4 {
            bundles = try parts[3].split(separator: ",", omittingEmptySubsequences: false).map { try bundleId("--token-key \(team):\(key)", String($0)) }
        }
        let publicPEM: String
        do {
            publicPEM = try SimulatorCredentials.publicKeyPEM(fromKeyPEM: try SimFlag.readFile("--token-key \(team):\(key)", path))
        } catch is SimulatorError {
            // Its text names only the parse step; this one says what to give instead.
            throw SimCommandError("--token-key \(team):\(key): \(path) is neither a .p8 private key nor a P-256 public key PEM")
        }
        return SimulatorTokenKey(teamId: team, keyId: key, publicKeyPEM: publicPEM, bundleIds: bundles)
    }

    static func bundleId(_ flag: String, _ text: String) throws -> String {
        guard !text.isEmpty, !text.contains(where: { $0.isWhitespace || $0 == ":" || $0 == "," }) else {
            throw SimCommandError("\(flag): \"\(text)\" is not a bundle id")
        }
        return text
    }
}

struct SimTokenRuleOptions: ParsableArguments {
    @Option(name: .customLong("unregistered-prefix"), help: ArgumentHelp("Answer 410 Unregistered (with a timestamp).", valueName: "hex"))
    var unregistered: [String] = []
    @Option(name: .customLong("expired-token-prefix"), help: ArgumentHelp("Answer 410 ExpiredToken (with a timestamp).", valueName: "hex"))
    var expired: [String] = []
    @Option(name: .customLong("bad-token-prefix"), help: ArgumentHelp("Answer 400 BadDeviceToken.", valueName: "hex"))
    var bad: [String] = []
    @Option(name: .customLong("not-for-topic-prefix"), help: ArgumentHelp("Answer 400 DeviceTokenNotForTopic.", valueName: "hex"))
    var notForTopic: [String] = []
    @Option(name: .customLong("answer"), help: ArgumentHelp("Answer this reason of Apple's table (status from the table) to tokens with the prefix, every time, e.g. abcd=BadTopic.", valueName: "hex=Reason"))
    var answer: [String] = []
    @Option(name: .customLong("flaky-prefix"), help: ArgumentHelp("Fail --flaky-count times with --flaky-status, then succeed (per token).", valueName: "hex"))
    var flaky: [String] = []
    @Option(name: .customLong("flaky-count"), parsing: .unconditionalSingleValue, help: ArgumentHelp("Failures before success: once for every --flaky-prefix, or once per prefix in order (default 2).", valueName: "n"))
    var flakyCount: [String] = []
    @Option(name: .customLong("flaky-status"), parsing: .unconditionalSingleValue, help: ArgumentHelp("429, 500 or 503: once for every --flaky-prefix, or once per prefix in order (default 503).", valueName: "status"))
    var flakyStatus: [String] = []

    func tokenRules() throws -> SimulatorTokenRules {
        func prefixes(_ flag: String, _ values: [String]) throws -> [String] {
            try values.map { v in
                guard !v.isEmpty, v.allSatisfy(\.isHexDigit) else { throw SimCommandError("\(flag) must be hex digits, not \"\(v)\"") }
                return v.lowercased()
            }
        }
        func perPrefix(_ flag: String, _ values: [String], default value: Int, _ parse: (String) throws -> Int) throws -> [Int] {
            switch values.count {
            case 0: return Array(repeating: value, count: flaky.count)
            case 1: return Array(repeating: try parse(values[0]), count: flaky.count)
            case flaky.count: return try values.map(parse)
            default: throw SimCommandError("\(flag) is given \(values.count) times for \(flaky.count) --flaky-prefix: give it once, or once per prefix")
            }
        }
        let flakyPrefixes = try prefixes("--flaky-prefix", flaky)
        if flakyPrefixes.isEmpty && !(flakyCount.isEmpty && flakyStatus.isEmpty) {
            throw SimCommandError("--flaky-count and --flaky-status need a --flaky-prefix")
        }
        let counts = try perPrefix("--flaky-count", flakyCount, default: 2) { try SimFlag.int("--flaky-count", $0, range: 1...1_000_000) }
        let statuses = try perPrefix("--flaky-status", flakyStatus, default: 503) { text in
            guard let s = Int(text), FlakyTokenRule.reasons[s] != nil else { throw SimCommandError("--flaky-status must be 429, 500 or 503, not \"\(text)\"") }
            return s
        }
        var answers: [FixedAnswerRule] = []
        for spec in answer {
            let parts = spec.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[1].isEmpty else { throw SimCommandError("--answer must be hex=Reason, not \"\(spec)\"") }
            let prefix = try prefixes("--answer", [parts[0]])[0]
            guard APNsReason(parts[1]).isKnown else { throw SimCommandError("--answer \(spec): \"\(parts[1])\" is not a reason in Apple's table") }
            answers.append(FixedAnswerRule(prefix: prefix, reason: APNsReason(parts[1])))
        }
        return SimulatorTokenRules(
            unregisteredPrefixes: try prefixes("--unregistered-prefix", unregistered),
            expiredTokenPrefixes: try prefixes("--expired-token-prefix", expired),
            badTokenPrefixes: try prefixes("--bad-token-prefix", bad),
            notForTopicPrefixes: try prefixes("--not-for-topic-prefix", notForTopic),
            flaky: flakyPrefixes.indices.map { FlakyTokenRule(prefix: flakyPrefixes[$0], failures: counts[$0], status: statuses[$0]) },
            answers: answers)
    }
}

struct SimFaultOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: ArgumentHelp("Probability (0-1) that a valid request gets 429 TooManyRequests.", valueName: "p")) var p429 = "0"
    @Option(parsing: .unconditional, help: ArgumentHelp("Probability of 500 InternalServerError.", valueName: "p")) var p500 = "0"
    @Option(parsing: .unconditional, help: ArgumentHelp("Probability of 503 ServiceUnavailable.", valueName: "p")) var p503 = "0"
    @Option(parsing: .unconditional, help: ArgumentHelp("Seed of the random faults and jitter: a token's faults depend only on the seed and the token.", valueName: "n"))
    var seed = "0"
    @Option(name: .customLong("latency-ms"), parsing: .unconditional, help: ArgumentHelp("Delay every answer by this many milliseconds.", valueName: "ms")) var latencyMs = "0"
    @Option(name: .customLong("latency-jitter-ms"), parsing: .unconditional, help: ArgumentHelp("Plus a random 0 to this many milliseconds.", valueName: "ms")) var latencyJitterMs = "0"
    @Option(name: .customLong("goaway-after"), parsing: .unconditional, help: ArgumentHelp("After answering N requests a connection sends GOAWAY with {\"reason\":…} as debug data and closes when its open streams are answered.", valueName: "n"))
    var goawayAfter: String?
    @Option(name: .customLong("goaway-reason"), help: ArgumentHelp("The reason in the GOAWAY debug data.", valueName: "reason")) var goawayReason = "Shutdown"
    @Option(name: .customLong("close-after"), parsing: .unconditional, help: ArgumentHelp("The Nth request on each connection cuts the TCP connection (RST, no GOAWAY).", valueName: "n"))
    var closeAfter: String?
    @Option(name: .customLong("close-mode"), help: ArgumentHelp("before: cut before processing that request (not delivered); after: process it, then cut before answering (delivered, answer lost).", valueName: "before|after"))
    var closeMode = "after"
    @Option(name: .customLong("max-concurrent-streams"), parsing: .unconditional, help: ArgumentHelp("SETTINGS_MAX_CONCURRENT_STREAMS once a connection is authenticated (provider-token connections start at 1, like Apple).", valueName: "n"))
    var maxConcurrentStreams = "1000"

    func faults() throws -> SimulatorFaults {
        var f = SimulatorFaults()
        f.p429 = try SimFlag.probability("--p429", p429)
        f.p500 = try SimFlag.probability("--p500", p500)
        f.p503 = try SimFlag.probability("--p503", p503)
        if f.p429 + f.p500 + f.p503 > 1 { throw SimCommandError("--p429 + --p500 + --p503 must not exceed 1") }
        guard let s = UInt64(seed) else { throw SimCommandError("--seed must be a whole number ≥ 0, not \"\(seed)\"") }
        f.seed = s
        f.latencyMs = try SimFlag.int("--latency-ms", latencyMs, range: 0...600_000)
        f.latencyJitterMs = try SimFlag.int("--latency-jitter-ms", latencyJitterMs, range: 0...600_000)
        f.goawayAfter = try goawayAfter.map { try SimFlag.int("--goaway-after", $0, range: 1...Int(Int32.max)) }
        f.goawayReason = APNsReason(goawayReason)
        f.closeAfter = try closeAfter.map { try SimFlag.int("--close-after", $0, range: 1...Int(Int32.max)) }
        guard let mode = SimulatorFaults.CloseMode(rawValue: closeMode) else {
            throw SimCommandError("--close-mode must be before or after, not \"\(closeMode)\"")
        }
        f.closeMode = mode
        return f
    }
}

/// SIGINT and SIGTERM, caught from creation on. The signals are ignored first so the default
/// action (death without a stats line) cannot win the race with the dispatch sources; a signal
/// that arrives before `wait()` is kept by the semaphore.
final class StopSignal {
    private let done = DispatchSemaphore(value: 0)
    private var sources: [any DispatchSourceSignal] = []

    init() {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [done] in done.signal() }
            source.resume()
            sources.append(source)
        }
    }

    func wait() {
        done.wait()
        sources.forEach { $0.cancel() }
    }
}

/// Reading flag values, with messages that name the flag.
enum SimFlag {
    static func int(_ flag: String, _ text: String, range: ClosedRange<Int>) throws -> Int {
        guard let v = Int(text), range.contains(v) else {
            throw SimCommandError("\(flag) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \"\(text)\"")
        }
        return v
    }

    static func probability(_ flag: String, _ text: String) throws -> Double {
        guard let v = Double(text), v.isFinite, v >= 0, v <= 1 else {
            throw SimCommandError("\(flag) must be a probability from 0 to 1, not \"\(text)\"")
        }
        return v
    }

    static func readFile(_ flag: String, _ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            let why = FileManager.default.fileExists(atPath: path) ? "permission denied or not a regular file" : "no such file"
            throw SimCommandError("cannot read \(flag) file \(path): \(why)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

struct SimCommandError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
