import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// `RoutingSender`: one sender over several pools, each pool its own in-process simulator (its own
/// key) over TLS + HTTP/2 on 127.0.0.1, the simulators' request logs as the witnesses.
@Suite(.serialized) struct RoutingSenderTests {
    static let bundle = "com.example.app"

    /// A simulator that accepts tokens signed with its own key, for `bundle`.
    struct Endpoint {
        let key = TestKey()
        let sim: APNsSimulator

        init() throws {
            var config = SimulatorConfiguration(teamId: TestKey.teamId, keyId: TestKey.keyId, publicKeyPEM: key.publicKeyPEM)
            config.bundleId = RoutingSenderTests.bundle
            sim = try APNsSimulator.start(config)
        }

        /// A pool to this simulator; `signedWith` another key gets InvalidProviderToken.
        func pool(connections: Int = 1, streams: Int = 20, signedWith other: TestKey? = nil) throws -> RoutingSender.Pool {
            let token = try ProviderToken(privateKeyPEM: (other ?? key).privateKeyPEM, source: "test",
                                          teamId: TestKey.teamId, keyId: TestKey.keyId)
            return RoutingSender.Pool(settings: ConnectionSettings(baseURL: "https://127.0.0.1:\(sim.port)", trust: .caPEM(sim.caCertificatePEM),
                                                                   maxStreams: streams),
                                      connections: connections, token: token)
        }

        /// Device tokens (hex) the simulator was asked for.
        var tokensAsked: Set<String> { Set(sim.requestLog.entries().compactMap(\.token)) }
    }

    static func hex(_ i: Int) -> String { String(format: "%064x", i) }

    static func jobs(_ range: ClosedRange<Int>, pool: Int, topic: String = bundle) -> [PushJob] {
        range.map { i in
            PushJob(index: i, request: PushRequest(token: try! DeviceToken.normalize(hex(i)).get(), payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8),
                                                   apnsId: String(format: "00000000-0000-5000-8000-%012x", i), topic: topic,
                                                   pushType: .alert, priority: 10),
                    pool: pool)
        }
    }

    /// Results until `count` of those `counted` came or `seconds` passed (an absence must end: a
    /// halted pool answers no more).
    static func collect(_ sender: any PushSending, _ count: Int, within seconds: TimeInterval = 10,
                        counting counted: (PushResult) -> Bool = { _ in true }) -> [PushResult] {
        var out: [PushResult] = []
        let end = Date().addingTimeInterval(seconds)
        while out.filter(counted).count < count && Date() < end { out += sender.results(timeout: 0.2) }
        return out
    }

    @Test func eachJobGoesThroughItsPoolAndItsResultSaysWhich() throws {
        let a = try Endpoint(), b = try Endpoint()
        defer { try? a.sim.shutdown(); try? b.sim.shutdown() }
        let sender = try RoutingSender(pools: [a.pool(connections: 2), b.pool()])
        // Interleaved in one submit: the routing is the job's, not the batch's.
        let mixed = zip(Self.jobs(1...30, pool: 0), Self.jobs(101...130, pool: 1)).flatMap { [$0, $1] }
        sender.submit(mixed)
        let results = Self.collect(sender, 60)
        sender.shutdown()
        #expect(results.count == 60)
        #expect(results.allSatisfy { $0.outcome.status == 200 }, "\(results.filter { $0.outcome.status != 200 }.prefix(3).map(\.outcome))")
        #expect(Set(results.filter { $0.pool == 0 }.map(\.index)) == Set(1...30))
        #expect(Set(results.filter { $0.pool == 1 }.map(\.index)) == Set(101...130))
        #expect(a.tokensAsked == Set((1...30).map(Self.hex)), "pool 0's jobs reach pool 0's endpoint, only they")
        #expect(b.tokensAsked == Set((101...130).map(Self.hex)), "pool 1's jobs reach pool 1's endpoint, only they")
        // Connection numbers are per pool: each pool starts at 1.
        #expect(results.filter { $0.pool == 1 }.allSatisfy { $0.connection == 1 })
        #expect(Set(results.filter { $0.pool == 0 }.map(\.connection)).isSubset(of: [1, 2]))
        let c = sender.counters
        #expect(c.connectionsOpened == a.sim.requestLog.stats().connections + b.sim.requestLog.stats().connections)
        #expect(c.jwtsSigned == 2, "one token per pool, each signed once")
    }

    @Test func theWindowIsTheSumOfEachPoolsConnectionsTimesStreams() throws {
        let a = try Endpoint(), b = try Endpoint()
        defer { try? a.sim.shutdown(); try? b.sim.shutdown() }
        var shared = try a.pool(connections: 3, streams: 5)
        let sender = try RoutingSender(pools: [a.pool(connections: 2, streams: 10), shared])
        defer { sender.shutdown() }
        #expect(sender.poolCount == 2)
        #expect(sender.window == 2 * 10 + 3 * 5)
        #expect(sender.connectionCount == 5 && sender.streamsPerConnection == 10)
        #expect(sender.connections(pool: 0) == 2 && sender.streams(pool: 0) == 10)
        #expect(sender.connections(pool: 1) == 3 && sender.streams(pool: 1) == 5)

        // A single sender is one pool: the protocol's answers for it.
        let single: any PushSending = try APNsSender(settings: shared.settings, connections: 4, token: shared.token)
        defer { single.shutdown() }
        #expect(single.poolCount == 1 && single.window == 4 * 5 && single.connections(pool: 0) == 4 && single.streams(pool: 0) == 5)

        // Two pools of one team (production and sandbox, say) may share one token: counted once.
        shared.settings = ConnectionSettings(baseURL: "https://127.0.0.1:\(b.sim.port)", trust: .caPEM(b.sim.caCertificatePEM), maxStreams: 5)
        let sharing = try RoutingSender(pools: [a.pool(), shared, shared])
        defer { sharing.shutdown() }
        _ = try shared.token?.current()
        #expect(sharing.counters.jwtsSigned == 1)
    }

    @Test func aPausedPoolHoldsItsJobsAndAWithdrawalTakesOnlyTheChosenOnes() throws {
        let a = try Endpoint(), b = try Endpoint()
        defer { try? a.sim.shutdown(); try? b.sim.shutdown() }
        let sender = try RoutingSender(pools: [a.pool(), b.pool()])
        sender.pause(pool: 1, until: Date().addingTimeInterval(60))
        sender.submit(Self.jobs(1...10, pool: 0) + Self.jobs(101...110, pool: 1))
        let first = Self.collect(sender, 10)
        #expect(first.count == 10 && first.allSatisfy { $0.pool == 0 && $0.outcome.status == 200 }, "the other pool is not paused")
        #expect(sender.results(timeout: 0.2).isEmpty && b.sim.requestLog.count == 0, "the paused pool starts nothing")
        // Even indices of either pool: only the paused pool's are still queued.
        let withdrawn = sender.withdrawQueued { $0.index.isMultiple(of: 2) }
        #expect(Set(withdrawn) == Set(stride(from: 102, through: 110, by: 2)))
        sender.pause(pool: 1, until: Date())
        let rest = Self.collect(sender, 5)
        sender.shutdown()
        #expect(Set(rest.map(\.index)) == Set(stride(from: 101, through: 109, by: 2)) && rest.allSatisfy { $0.pool == 1 })
        #expect(b.tokensAsked == Set(stride(from: 101, through: 109, by: 2).map(Self.hex)), "withdrawn jobs never leave")
    }

    @Test func aPauseOfTheSenderHoldsEveryPool() throws {
        let a = try Endpoint(), b = try Endpoint()
        defer { try? a.sim.shutdown(); try? b.sim.shutdown() }
        let sender = try RoutingSender(pools: [a.pool(), b.pool()])
        sender.pause(until: Date().addingTimeInterval(60))
        sender.submit(Self.jobs(1...3, pool: 0) + Self.jobs(101...103, pool: 1))
        #expect(sender.results(timeout: 0.3).isEmpty && a.sim.requestLog.count == 0 && b.sim.requestLog.count == 0)
        #expect(Set(sender.withdrawQueued()) == Set([1, 2, 3, 101, 102, 103]))
        sender.shutdown()
    }

    @Test func refusedCredentialsHaltTheirPoolOnly() throws {
        let a = try Endpoint(), b = try Endpoint()
        defer { try? a.sim.shutdown(); try? b.sim.shutdown() }
        // Pool 1 signs with a key its endpoint does not know: InvalidProviderToken.
        let sender = try RoutingSender(pools: [a.pool(), b.pool(signedWith: TestKey())])
        sender.submit(Self.jobs(101...120, pool: 1))
        let refused = Self.collect(sender, 1)
        #expect(refused.first?.outcome.reason == "InvalidProviderToken" && refused.first?.outcome.abortScope == .credentials)
        #expect(waitUntil(timeout: 5) { sender.halted(pool: 1) }, "the refused pool halts")
        sender.submit(Self.jobs(1...20, pool: 0))
        let results = refused + Self.collect(sender, 20, counting: { $0.pool == 0 })
        let late = sender.results(timeout: 0.2)
        #expect(!sender.halted(pool: 0), "another team's pool is not halted")
        #expect(Set(results.filter { $0.pool == 0 && $0.outcome.status == 200 }.map(\.index)) == Set(1...20))
        let answered = (results + late).filter { $0.pool == 1 }
        #expect(answered.allSatisfy { $0.outcome.reason == "InvalidProviderToken" })
        let withdrawn = sender.withdrawQueued()
        sender.shutdown()
        #expect(answered.count + withdrawn.count == 20, "every pool-1 job was answered or is still queued: \(answered.count) + \(withdrawn.count)")
        #expect(b.sim.requestLog.count == answered.count, "the halted pool started nothing more")
    }

    @Test func aRefusedTopicHoldsThatTopicsJobsAndThePoolCarriesOn() throws {
        let a = try Endpoint()
        defer { try? a.sim.shutdown() }
        let sender = try RoutingSender(pools: [a.pool(streams: 1)])
        let other = "com.example.other"   // not the simulator's app: TopicDisallowed
        sender.submit(Self.jobs(1...1, pool: 0, topic: other))
        let refused = Self.collect(sender, 1)
        #expect(refused.first?.outcome.reason == "TopicDisallowed" && refused.first?.outcome.abortScope == .topic)
        // Interleaved: the app sharing the pool keeps sending, the refused topic's jobs stay queued.
        sender.submit(zip(Self.jobs(2...11, pool: 0, topic: other), Self.jobs(101...110, pool: 0)).flatMap { [$0, $1] })
        let results = Self.collect(sender, 10, within: 5)
        #expect(Set(results.map(\.index)) == Set(101...110) && results.allSatisfy { $0.outcome.status == 200 },
                "\(results.map { "\($0.index) \($0.outcome)" }.prefix(3))")
        #expect(sender.results(timeout: 0.2).isEmpty)
        #expect(!sender.halted(pool: 0), "a refused topic does not halt its pool")
        let withdrawn = sender.withdrawQueued { $0.request.topic == other }
        sender.shutdown()
        #expect(Set(withdrawn) == Set(2...11))
        #expect(a.sim.requestLog.count == 11, "the refused topic's queued jobs never left")
    }

    @Test func sendDropsTheQueuedRequestsOfARefusedTopic() throws {
        let a = try Endpoint()
        defer { try? a.sim.shutdown() }
        let pool = try a.pool(streams: 1)
        let sender = try APNsSender(settings: pool.settings, connections: 1, token: pool.token)
        let requests = (Self.jobs(1...5, pool: 0, topic: "com.example.other") + Self.jobs(6...10, pool: 0)).map(\.request)
        let results = try sender.send(requests)
        #expect(results.filter { $0.outcome.status == 200 }.count == 5)
        #expect(results.filter { $0.outcome.reason == "TopicDisallowed" }.count == a.sim.requestLog.count - 5)
    }
}
