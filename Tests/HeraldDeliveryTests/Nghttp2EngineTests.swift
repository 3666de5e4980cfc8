import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing
import X509

/// The sender's connections (`Nghttp2Worker` over CHTTP2Client) against the in-process simulator
/// over TLS + HTTP/2 on 127.0.0.1, with the simulator's request log as the witness.
@Suite(.serialized) struct Nghttp2EngineTests {
    typealias Fixture = StreamingSenderTests.Fixture

    static func sender(_ f: Fixture, streams: Int = 50, connections: Int = 1, requestTimeoutMs: Int = 10_000, idleTimeoutMs: Int = 600_000,
                       token: ProviderToken? = nil) throws -> APNsSender {
        try APNsSender(settings: f.settings(streams: streams, requestTimeoutMs: requestTimeoutMs, idleTimeoutMs: idleTimeoutMs),
                       connections: connections, token: token ?? f.token())
    }

    static func stream(_ sender: APNsSender, _ all: [PushJob], ahead: Int) -> [PushResult] {
        StreamingSenderTests.stream(sender, all, ahead: ahead)
    }

    @Test func everyJobIsAnsweredOnceWithApplesHeadersOnly() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let token = try f.token()
        let sender = try Self.sender(f, streams: 40, connections: 2, token: token)
        let jobs = StreamingSenderTests.jobs(1...1_000)
        let results = Self.stream(sender, jobs, ahead: 160)
        sender.shutdown()
        #expect(results.count == 1_000)
        #expect(Set(results.map(\.index)) == Set(1...1_000))
        #expect(results.allSatisfy { $0.outcome.status == 200 && $0.httpVersion == 20 }, "\(Set(results.filter { $0.outcome.status != 200 }.map { "\($0.outcome)" }))")
        let sentIds = Dictionary(uniqueKeysWithValues: jobs.map { ($0.index, $0.request.apnsId) })
        #expect(results.allSatisfy { r in
            if case .answered(_, let id, _, _) = r.outcome { return id == sentIds[r.index] }
            return false
        }, "each answer carries its request's apns-id")
        #expect(results.allSatisfy { $0.apnsUniqueId?.count == 36 }, "the development server's apns-unique-id is read")
        let log = f.sim.requestLog.entries()
        #expect(log.count == 1_000)
        #expect(Set(log.map(\.connection)).count == 2, "two connections, both used")
        #expect(Set(log.compactMap(\.jwtIat)).count == 1 && token.signedCount == 1, "one JWT for every connection")
        #expect(sender.counters.connectionsOpened == 2 && sender.counters.jwtsSigned == 1)
        #expect(Set(log.compactMap { $0.headers["apns-id"] }).count == 1_000)
        #expect(log.allSatisfy { $0.headers["apns-id"] == $0.apnsId && $0.headers["apns-collapse-id"] == "herald:test"
                                 && $0.headers["apns-topic"] == StreamingSenderTests.bundle && $0.headers["apns-push-type"] == "alert"
                                 && $0.headers["apns-priority"] == "10" })
        #expect(log.allSatisfy { $0.otherHeaderNames == ["content-length"] }, "\(Set(log.map(\.otherHeaderNames)))")
        #expect(log.allSatisfy { $0.path.hasPrefix("/3/device/") && $0.path.count == "/3/device/".count + 64 })
    }

    @Test func rejectionsCarryTheirReasonAndTimestamp() throws {
        let f = try Fixture {
            $0.unregisteredPrefixes = ["dead"]
            $0.badTokenPrefixes = ["badd"]
        }
        defer { try? f.sim.shutdown() }
        let sender = try Self.sender(f)
        let jobs = ["dead", "badd", "0000"].enumerated().map { i, prefix in
            PushJob(index: i, request: PushRequest(token: try! DeviceToken.normalize(prefix + String(repeating: "1", count: 60)).get(),
                                                   payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8),
                                                   apnsId: String(format: "00000000-0000-5000-8000-%012x", i),
                                                   topic: StreamingSenderTests.bundle, pushType: .alert, priority: 10))
        }
        let results = Self.stream(sender, jobs, ahead: 3).sorted { $0.index < $1.index }
        sender.shutdown()
        guard results.count == 3 else { Issue.record("\(results)"); return }
        guard case .answered(410, _, let reason, let timestamp) = results[0].outcome else { Issue.record("\(results[0].outcome)"); return }
        #expect(reason?.rawValue == "Unregistered" && (timestamp ?? 0) > 1_700_000_000_000)
        #expect(results[1].outcome.status == 400 && results[1].outcome.reason == "BadDeviceToken")
        #expect(results[2].outcome.status == 200)
    }

    /// The simulator sends GOAWAY after a connection's 60th request, covering the streams it has
    /// opened. The worker starts nothing more on that connection once the GOAWAY is read; a stream
    /// it started before (above the last stream id) is refused by nghttp2, never processed, and
    /// comes back as a transport failure the runner resends (same apns-id). The log must show each
    /// apns-id answered 200 once, apart from those resends.
    @Test func streamsAGoawayRefusedComeBackAndAreSentOnce() throws {
        let f = try Fixture { $0.faults.goawayAfter = 60 }
        defer { try? f.sim.shutdown() }
        let sender = try Self.sender(f, streams: 50)
        let all = StreamingSenderTests.jobs(1...600)
        var results = Self.stream(sender, all, ahead: 100)
        var resent: Set<Int> = []
        for _ in 0..<8 {
            let lost = Set(results.filter { $0.outcome.isTransportFailure }.map(\.index))
            if lost.isEmpty { break }
            resent.formUnion(lost)
            results = results.filter { !lost.contains($0.index) } + Self.stream(sender, all.filter { lost.contains($0.index) }, ahead: 100)
        }
        sender.shutdown()
        #expect(results.count == 600 && results.allSatisfy { $0.outcome.status == 200 }, "\(results.filter { $0.outcome.status != 200 }.prefix(3).map(\.outcome))")
        let log = f.sim.requestLog.entries()
        let answered200 = log.filter { $0.status == 200 && $0.outcome == .answered }.compactMap(\.apnsId)
        #expect(Set(answered200).count == 600)
        let resentIds = Set(all.filter { resent.contains($0.index) }.map(\.request.apnsId))
        let processedTwice = Dictionary(grouping: answered200, by: { $0 }).filter { $0.value.count > 1 }.keys
        #expect(processedTwice.allSatisfy { resentIds.contains($0) }, "no request processed twice unless it was resent")
        // Each connection serves its 60, plus at most the 50 already in flight when the GOAWAY left.
        #expect(f.sim.requestLog.stats().connections >= 6, "600 requests at 60 to 110 per connection")
        #expect(log.filter { $0.fault == "goaway" }.count >= 5)
        #expect(sender.counters.connectionsOpened == f.sim.requestLog.stats().connections, "every connection opened is counted")
    }

    @Test func anAnswerThatNeverComesIsResetAndReturnedAsATransportFailure() throws {
        let f = try Fixture { $0.faults.latencyMs = 3_000 }
        defer { try? f.sim.shutdown() }
        let sender = try Self.sender(f, requestTimeoutMs: 300)
        let results = Self.stream(sender, StreamingSenderTests.jobs(1...5), ahead: 5)
        sender.shutdown()
        #expect(results.count == 5)
        for r in results {
            guard case .transportFailure(let why) = r.outcome else { Issue.record("\(r.outcome)"); continue }
            #expect(why.detail.contains("no answer within the request timeout (300 ms)"), "\(why)")
        }
        #expect(results.allSatisfy { $0.event > 0 }, "a transport failure is an event for the circuit breaker")
    }

    /// The simulator's certificate is not in the system's trust store: nothing is sent, and the
    /// failure reads as a trust failure (the run stops and tells the operator to check apns.ca_file).
    @Test func anUntrustedServerIsATrustFailureAndNothingIsSent() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let settings = ConnectionSettings(baseURL: "https://127.0.0.1:\(f.sim.port)", trust: .system, maxStreams: 10)
        let sender = try APNsSender(settings: settings, connections: 1, token: try f.token())
        let results = Self.stream(sender, StreamingSenderTests.jobs(1...3), ahead: 3)
        sender.shutdown()
        #expect(results.count == 3 && results.allSatisfy { $0.outcome.meaning == .untrusted }, "\(results.map(\.outcome))")
        #expect(f.sim.requestLog.count == 0)
    }

    /// A server whose certificate (from a trusted CA) names another host: reached as 127.0.0.1 the
    /// name does not match, and the connection is refused: verification is never off.
    @Test func aCertificateForAnotherNameIsRefused() throws {
        let dir = TemporaryDirectory("nghttp2-name")
        let ca = try SimulatorCertificateAuthority(commonName: "test server CA")
        let leaf = try ca.issueServerCertificate(names: [.dnsName("apns.other.example")])
        let certificate = try dir.write("server.pem", leaf.certificatePEM)
        let key = try dir.write("server.key", leaf.privateKeyPEM)
        let f = try Fixture { $0.tls = .files(certificatePEMPath: certificate, privateKeyPEMPath: key) }
        defer { try? f.sim.shutdown() }
        let settings = ConnectionSettings(baseURL: "https://127.0.0.1:\(f.sim.port)", trust: .caPEM(ca.certificatePEM), maxStreams: 10)
        let sender = try APNsSender(settings: settings, connections: 1, token: try f.token())
        let results = Self.stream(sender, StreamingSenderTests.jobs(1...2), ahead: 2)
        sender.shutdown()
        #expect(results.count == 2 && results.allSatisfy { $0.outcome.meaning == .untrusted }, "\(results.map(\.outcome))")
        #expect(results.allSatisfy { if case .transportFailure(let why) = $0.outcome { why.detail.contains("IP address mismatch") } else { false } },
                "\(results.map(\.outcome))")
        #expect(f.sim.requestLog.count == 0)
    }

    /// A CA that cannot be used fails the sender's setup, saying so; it is not reported as a server
    /// whose certificate did not verify ("TLS trust:", which stops a run for apns.ca_file).
    @Test func aCAThatCannotBeUsedIsASetupErrorNotATrustFailure() throws {
        let port = try FreePort.next()
        let settings = ConnectionSettings(baseURL: "https://127.0.0.1:\(port)", trust: .caPEM("not a certificate"), maxStreams: 10)
        do {
            _ = try APNsSender(settings: settings, connections: 1, token: nil)
            Issue.record("a sender was built without a usable CA")
        } catch {
            guard case .engine(let why) = error else { Issue.record("\(error)"); return }
            #expect(why.hasPrefix("cannot set up TLS: no certificate in the CA text") && !why.contains("TLS trust"), "\(why)")
        }
    }

    @Test func nothingListeningIsAConnectFailureThatBacksOff() throws {
        let port = try FreePort.next()
        let settings = ConnectionSettings(baseURL: "https://127.0.0.1:\(port)", trust: .system, maxStreams: 10, connectTimeoutMs: 1_000)
        let sender = try APNsSender(settings: settings, connections: 1, token: nil)
        let results = Self.stream(sender, StreamingSenderTests.jobs(1...4), ahead: 4)
        sender.shutdown()
        #expect(results.count == 4)
        for r in results {
            guard case .transportFailure(let why) = r.outcome else { Issue.record("\(r.outcome)"); continue }
            #expect(why.kind == .connectFailed && why.detail.contains("could not connect"), "\(why)")
        }
        #expect(sender.counters.connectionsOpened == 0)
    }

    /// A sender through `proxy` (which wants herald / pr0xy-s3cret) with `password` from the environment.
    static func proxiedSender(_ f: Fixture, _ proxy: ConnectProxy, password: String, streams: Int, connections: Int) throws -> APNsSender {
        var settings = f.settings(streams: streams)
        settings.proxy = try ProxySettings.resolve(.http(url: proxy.url, userEnv: "U", passwordEnv: "P"),
                                                   environment: ["U": "herald", "P": password])
        return try APNsSender(settings: settings, connections: connections, token: try f.token())
    }

    @Test func pushesGoThroughTheProxysTunnelWithItsCredentials() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let proxy = try ConnectProxy(credentials: ("herald", "pr0xy-s3cret"))
        defer { proxy.stop() }
        let sender = try Self.proxiedSender(f, proxy, password: "pr0xy-s3cret", streams: 40, connections: 2)
        let results = Self.stream(sender, StreamingSenderTests.jobs(1...200), ahead: 80)
        sender.shutdown()
        #expect(results.count == 200 && results.allSatisfy { $0.outcome.status == 200 }, "\(Set(results.map { "\($0.outcome)" }))")
        #expect(f.sim.requestLog.count == 200)
        #expect(proxy.tunnels == 2 && proxy.refused == 0, "one tunnel per connection: \(proxy.tunnels), refused \(proxy.refused)")
        #expect(proxy.tunnelTargets == Array(repeating: "127.0.0.1:\(f.sim.port)", count: 2), "\(proxy.tunnelTargets)")
    }

    @Test func aProxyThatRefusesTheTunnelIsAConnectFailureThatNamesItButNotThePassword() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let proxy = try ConnectProxy(credentials: ("herald", "pr0xy-s3cret"))
        defer { proxy.stop() }
        let sender = try Self.proxiedSender(f, proxy, password: "not-it-42", streams: 10, connections: 1)
        let results = Self.stream(sender, StreamingSenderTests.jobs(1...3), ahead: 3)
        sender.shutdown()
        #expect(results.count == 3)
        for r in results {
            guard case .transportFailure(let why) = r.outcome else { Issue.record("\(r.outcome)"); continue }
            #expect(why.detail.contains("via http://127.0.0.1:\(proxy.port) (with credentials)") && why.detail.contains("refused to open a tunnel (HTTP 407)"), "\(why)")
            #expect(!why.detail.contains("not-it-42") && !why.detail.contains("herald:"), "\(why)")
        }
        #expect(proxy.refused >= 1 && proxy.tunnels == 0 && f.sim.requestLog.count == 0)
    }
}

/// Certificate authentication on the nghttp2 engine: the identity is handed to OpenSSL in memory.
@Suite(.serialized) struct Nghttp2CertificateAuthTests {
    let dir = TemporaryDirectory("nghttp2-cert-auth")

    @Test(arguments: ["p12", "encrypted pem", "pem files"])
    func aClientCertificateSendsWithoutAuthorization(_ form: String) throws {
        let f = try CertificateAuthTests.Fixture(dir: dir)
        defer { try? f.sim.shutdown() }
        let files = try ClientCertificateFiles(issuedBy: f.ca, name: "app", in: dir)
        let identity: ClientIdentity = switch form {
        case "p12": try ClientIdentity.load(.p12(path: files.p12, passwordEnv: "P"), environment: ["P": files.password])
        case "encrypted pem": try ClientIdentity.load(.pem(certificatePath: files.certificate, keyPath: files.encryptedKey, passwordEnv: "P"),
                                                      environment: ["P": files.password])
        default: ClientIdentity(certificatePEMPath: files.certificate, privateKeyPEMPath: files.key)
        }
        let sender = try APNsSender(settings: f.settings(identity), connections: 1, token: nil)
        let results = try sender.send(CertificateAuthTests.requests(20))
        sender.shutdown()
        #expect(results.allSatisfy { $0.outcome.isOK }, "\(results.map(\.outcome))")
        let log = f.sim.requestLog.entries().filter { $0.path.hasPrefix("/3/device/") }
        #expect(log.count == 20 && log.allSatisfy { $0.headers["authorization"] == nil })
    }

    @Test func withoutTheCertificateTheServerHangsUpAndNothingIsProcessed() throws {
        let f = try CertificateAuthTests.Fixture(dir: dir)
        defer { try? f.sim.shutdown() }
        let sender = try APNsSender(settings: f.settings(nil), connections: 1, token: nil)
        let results = StreamingSenderTests.stream(sender, StreamingSenderTests.jobs(1...3), ahead: 3)
        sender.shutdown()
        #expect(results.count == 3 && results.allSatisfy { $0.outcome.isTransportFailure }, "\(results.map(\.outcome))")
        #expect(f.sim.requestLog.entries().filter { $0.path.hasPrefix("/3/device/") }.isEmpty)
    }
}
