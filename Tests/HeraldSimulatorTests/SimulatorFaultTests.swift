import Foundation
import HeraldCore
import HeraldDelivery
@testable import HeraldSimulator
import HeraldTestSupport
import Testing

/// Token rules and injected faults, driven by herald's own client over TLS + HTTP/2.
@Suite(.serialized) struct SimulatorFaultTests {
    // MARK: deterministic token rules

    @Test func tokenRulesAnswerTheirReasons() throws {
        let h = try SimulatorHarness {
            $0.tokenRules = SimulatorTokenRules(unregisteredPrefixes: ["DEAD"], expiredTokenPrefixes: ["e0"], badTokenPrefixes: ["bad0", "dead"],
                                                notForTopicPrefixes: ["f0"])
        }
        defer { h.shutdown() }
        let jwt = try h.jwt()
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let unregistered = try h.send(Push.request(1, prefix: "dead"), authorization: jwt)
        #expect(unregistered.status == 410 && unregistered.reason == "Unregistered", "the first matching rule wins over bad0/dead")
        #expect((unregistered.timestamp ?? 0) >= before - 1000)
        let expired = try h.send(Push.request(2, prefix: "e0"), authorization: jwt)
        #expect(expired.status == 410 && expired.reason == "ExpiredToken")
        #expect((expired.timestamp ?? 0) >= before - 1000)
        let bad = try h.send(Push.request(3, prefix: "bad0"), authorization: jwt)
        #expect(bad.status == 400 && bad.reason == "BadDeviceToken" && bad.timestamp == nil)
        let notForTopic = try h.send(Push.request(4, prefix: "f0"), authorization: jwt)
        #expect(notForTopic.status == 400 && notForTopic.reason == "DeviceTokenNotForTopic")
        #expect(try h.send(Push.request(5, prefix: "0d"), authorization: jwt).status == 200)
        // Rules apply only to requests that pass validation.
        let wrongTopic = try h.send(Push.request(6, prefix: "dead") { $0.topic = "com.example.other" }, authorization: jwt)
        #expect(wrongTopic.reason == "TopicDisallowed")
        // A whole token is a prefix too: a list of tokens works.
        let exact = try SimulatorHarness { $0.tokenRules.unregisteredPrefixes = [Push.token(9)] }
        defer { exact.shutdown() }
        #expect(try exact.send(Push.request(9), authorization: try exact.jwt()).reason == "Unregistered")
        #expect(try exact.send(Push.request(10), authorization: try exact.jwt()).status == 200)
    }

    @Test func flakyTokensFailTheirCountThenSucceed() throws {
        let h = try SimulatorHarness {
            $0.tokenRules.flaky = [FlakyTokenRule(prefix: "f1", failures: 2, status: 503), FlakyTokenRule(prefix: "f2", failures: 1, status: 429),
                                   FlakyTokenRule(prefix: "f3", failures: 3, status: 500)]
        }
        defer { h.shutdown() }
        let conn = try h.connection()
        let jwt = try h.jwt()
        func statuses(_ request: PushRequest, _ n: Int) throws -> [String] {
            try (0..<n).map { _ in
                let o = try conn.send([request], authorization: jwt)[0].outcome
                return "\(o.status ?? 0) \(o.reason ?? "")"
            }
        }
        #expect(try statuses(Push.request(1, prefix: "f1"), 4) == ["503 ServiceUnavailable", "503 ServiceUnavailable", "200 ", "200 "])
        #expect(try statuses(Push.request(2, prefix: "f1"), 3) == ["503 ServiceUnavailable", "503 ServiceUnavailable", "200 "], "counted per token")
        #expect(try statuses(Push.request(3, prefix: "f2"), 2) == ["429 TooManyRequests", "200 "])
        #expect(try statuses(Push.request(4, prefix: "f3"), 4) == ["500 InternalServerError", "500 InternalServerError", "500 InternalServerError", "200 "])
        #expect(h.sim.requestLog.stats().byFault == ["flaky": 8])
        #expect(h.sim.requestLog.entries().filter { $0.fault == "flaky" }.allSatisfy { $0.status != 200 })
    }

    // MARK: seeded random faults

    /// Sends `requests` and returns each token's answer, per request index.
    func outcomes(seed: UInt64, _ requests: [PushRequest], connections: Int, streams: Int) throws -> [String] {
        let h = try SimulatorHarness { $0.faults = SimulatorFaults(p429: 0.1, p500: 0.1, p503: 0.1, seed: seed) }
        defer { h.shutdown() }
        let token = try ProviderToken(privateKeyPEM: h.key.privateKeyPEM, source: "test", teamId: TestKey.teamId, keyId: TestKey.keyId)
        let sender = try APNsSender(settings: ConnectionSettings(baseURL: "https://127.0.0.1:\(h.sim.port)", trust: .caPEM(h.sim.caCertificatePEM),
                                                                 maxStreams: streams), connections: connections, token: token)
        let results = try sender.send(requests).sorted { $0.index < $1.index }
        let stats = h.sim.requestLog.stats()
        #expect(stats.byFault["p429"] == stats.byReason["TooManyRequests"])
        #expect(stats.byFault["p503"] == stats.byReason["ServiceUnavailable"])
        return results.map { "\($0.outcome.status ?? 0) \($0.outcome.reason ?? "")" }
    }

    @Test func randomFaultsDependOnlyOnSeedAndToken() throws {
        let requests = Push.many(300)
        let sequential = try outcomes(seed: 42, requests, connections: 1, streams: 1)
        let concurrent = try outcomes(seed: 42, requests, connections: 3, streams: 50)
        #expect(sequential == concurrent, "the same seed gives the same faults whatever the concurrency")
        for expected in ["429 TooManyRequests", "500 InternalServerError", "503 ServiceUnavailable", "200 "] {
            #expect(sequential.contains(expected), "\(expected) occurs among 300 tokens at 10 % each")
        }
        let faulted = sequential.filter { $0 != "200 " }.count
        #expect((40...140).contains(faulted), "about 30 % faulted: \(faulted)")
        let otherSeed = try outcomes(seed: 43, requests, connections: 1, streams: 1)
        #expect(otherSeed != sequential)
    }

    /// A token's first roll depends on (seed, token) only; after k faults in a row its next roll
    /// is roll k, so a faulted token recovers on a retry, and after a success it starts over.
    @Test func aFaultedTokenGetsAFreshRollOnItsRetry() throws {
        let h = try SimulatorHarness { $0.faults = SimulatorFaults(p503: 0.5, seed: 7) }
        defer { h.shutdown() }
        let conn = try h.connection(streams: 1)
        let jwt = try h.jwt()
        var recovered = 0
        for i in 1...16 {
            var history: [Int] = []
            for _ in 0..<6 { history.append(try conn.send([Push.request(i)], authorization: jwt)[0].outcome.status ?? 0) }
            var k = 0
            var expected: [Int] = []
            for _ in 0..<6 {
                let faulted = FaultDice.unit(seed: 7, key: Push.token(i), index: UInt64(k)) < 0.5
                expected.append(faulted ? 503 : 200)
                k = faulted ? k + 1 : 0
            }
            #expect(history == expected, "token \(i)")
            if let first503 = history.firstIndex(of: 503), history[first503...].contains(200) { recovered += 1 }
        }
        #expect(recovered > 0, "some token failed and then recovered")
    }

    @Test func probabilityOneFaultsEveryValidRequestButNotInvalidOnes() throws {
        let h = try SimulatorHarness { $0.faults = SimulatorFaults(p500: 1) }
        defer { h.shutdown() }
        let jwt = try h.jwt()
        let results = try h.send(Push.many(20), authorization: jwt)
        #expect(results.allSatisfy { $0.outcome.status == 500 && $0.outcome.reason == "InternalServerError" })
        #expect(try h.send(Push.request(1) { $0.topic = "com.example.other" }, authorization: jwt).reason == "TopicDisallowed")
        #expect(h.sim.requestLog.stats().byFault == ["p500": 20])
    }

    // MARK: latency

    @Test func latencyWithJitterStaysInRangeAndIsSeeded() throws {
        let faults = SimulatorFaults(seed: 3, latencyMs: 5, latencyJitterMs: 10)
        let policy = ConnectionPolicy(behavior: try APNsBehavior(configuration: SimulatorConfiguration(teamId: "T", keyId: "K",
                                      publicKeyPEM: TestKey().publicKeyPEM)), log: try SimulatorRequestLog(), faults: faults,
                                      maxConcurrentStreams: 10, acceptsProviderTokens: true)
        let delays = (1...200).map { policy.latency(connection: 1, stream: 2 * $0 + 1) }
        #expect(delays.allSatisfy { (5...15).contains($0) })
        #expect(Set(delays).count > 5, "jitter varies")
        #expect(delays == (1...200).map { policy.latency(connection: 1, stream: 2 * $0 + 1) }, "and is reproducible")

        let h = try SimulatorHarness { $0.faults = faults }
        defer { h.shutdown() }
        let results = try h.send(Push.many(30), authorization: try h.jwt())
        #expect(results.allSatisfy { $0.outcome.status == 200 })
    }

    // MARK: connection faults

    @Test func goawayAfterNMovesTheClientToANewConnectionWithoutLosingRequests() throws {
        let h = try SimulatorHarness { $0.faults.goawayAfter = 3 }
        defer { h.shutdown() }
        let conn = try h.connection(streams: 1)
        let jwt = try h.jwt()
        var outcomes: [PushOutcome] = []
        for i in 1...10 { outcomes.append(try conn.send([Push.request(i)], authorization: jwt)[0].outcome) }
        #expect(outcomes.allSatisfy { $0.status == 200 }, "\(outcomes)")
        let log = h.sim.requestLog.entries()
        let byConnection = Dictionary(grouping: log, by: \.connection)
        #expect(byConnection.count == 4, "3 + 3 + 3 + 1")
        for (_, entries) in byConnection where entries.count == 3 {
            #expect(entries.map(\.fault) == [nil, nil, "goaway"])
        }
        #expect(h.sim.requestLog.stats().connections == 4)

    }

    /// Many streams at once: the streams a GOAWAY covers are answered; the ones opened after it
    /// are never processed, and the client retries them on a new connection. Nothing is lost
    /// or answered twice.
    @Test func goawayUnderConcurrencyLosesNothingAndDuplicatesNothing() throws {
        let h = try SimulatorHarness { $0.faults.goawayAfter = 50 }
        defer { h.shutdown() }
        let burst = try h.send(Push.many(120), authorization: try h.jwt(), streams: 20)
        // The client retries the streams a GOAWAY refused on a new connection; a stream racing
        // the GOAWAY can still fail. That is a transport failure the pipeline resends with the
        // same apns-id, never a lost or doubled answer.
        let ok = burst.filter { $0.outcome.status == 200 }
        let failed = burst.filter { if case .transportFailure = $0.outcome { return true } else { return false } }
        #expect(ok.count + failed.count == 120, "\(burst.filter { $0.outcome.status != 200 }.map(\.outcome))")
        #expect(failed.count <= 2, "at most the odd stream caught by the GOAWAY: \(failed.map(\.outcome))")
        let answered = h.sim.requestLog.entries().filter { $0.status == 200 }.compactMap(\.apnsId)
        #expect(Set(answered).count == answered.count, "no request processed twice")
        #expect(Set(ok.map { Push.apnsId($0.index + 1) }).isSubset(of: Set(answered)), "every 200 the client saw is in the server's log")
        // Each connection serves its 50, and the streams already open when its GOAWAY left: every
        // connection that reached 50 sent one GOAWAY, and the client moved on to a new one.
        let served = Dictionary(grouping: h.sim.requestLog.entries(), by: \.connection).mapValues(\.count)
        #expect(served.count >= 2 && served.count == h.sim.requestLog.stats().connections, "\(served)")
        #expect(h.sim.requestLog.stats().byFault["goaway"] == served.values.filter { $0 >= 50 }.count, "\(served)")
    }

    /// The connection is cut at its 3rd request. `before`: that request was never processed.
    /// The client sees a transport failure for it (or, a client that resends, a 200 from
    /// another connection); the log shows what the server did.
    @Test(arguments: [SimulatorFaults.CloseMode.before, .after])
    func closeAfterNCutsTheConnection(mode: SimulatorFaults.CloseMode) throws {
        let h = try SimulatorHarness { $0.faults.closeAfter = 3; $0.faults.closeMode = mode }
        defer { h.shutdown() }
        let conn = try h.connection(streams: 1)
        let jwt = try h.jwt()
        var outcomes: [PushOutcome] = []
        for i in 1...5 { outcomes.append(try conn.send([Push.request(i)], authorization: jwt)[0].outcome) }
        let log = h.sim.requestLog.entries()
        let cut = try #require(log.first { $0.outcome != .answered })
        #expect(cut.connection == 1 && log.filter { $0.connection == 1 }.count == 3)
        #expect(cut.apnsId == (mode == .after ? Push.apnsId(3) : nil))
        #expect(cut.path.hasSuffix(Push.token(3)))
        if mode == .before {
            #expect(cut.outcome == .closedBeforeProcessing && cut.status == nil && cut.fault == "close_before")
        } else {
            #expect(cut.outcome == .closedAfterProcessing && cut.status == 200 && cut.fault == "close_after")
        }
        // Requests 1, 2, 4 and 5 were answered 200 (4 and 5 on a new connection).
        for i in [0, 1, 3, 4] { #expect(outcomes[i].status == 200, "request \(i + 1): \(outcomes[i])") }
        // Request 3: a transport failure, or a resend answered on another connection.
        if outcomes[2].status == 200 {
            #expect(log.contains { $0.apnsId == Push.apnsId(3) && $0.outcome == .answered && $0.connection != 1 })
        } else {
            #expect(outcomes[2].isTransportFailure, "\(outcomes[2])")
        }
        #expect(Set(log.map(\.connection)).count >= 2)
    }
}
