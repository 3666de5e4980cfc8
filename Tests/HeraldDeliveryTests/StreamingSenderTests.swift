import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Synchronization
import Testing

/// The streaming sender (`APNsSender.submit` / `results`) against the in-process simulator over
/// TLS + HTTP/2 on 127.0.0.1, with the simulator's request log as the witness.
@Suite(.serialized) struct StreamingSenderTests {
    static let bundle = "com.example.app"

    struct Fixture {
        let key = TestKey()
        let sim: APNsSimulator

        init(_ configure: (inout SimulatorConfiguration) -> Void = { _ in }) throws {
            var config = SimulatorConfiguration(teamId: TestKey.teamId, keyId: TestKey.keyId, publicKeyPEM: key.publicKeyPEM)
            config.bundleId = StreamingSenderTests.bundle
            configure(&config)
            sim = try APNsSimulator.start(config)
        }

        func token(clock: @escaping @Sendable () -> Date = { Date() }) throws -> ProviderToken {
            try ProviderToken(privateKeyPEM: key.privateKeyPEM, source: "test", teamId: TestKey.teamId, keyId: TestKey.keyId, clock: clock)
        }

        func settings(streams: Int = 50, requestTimeoutMs: Int = 10_000, idleTimeoutMs: Int = 600_000) -> ConnectionSettings {
            ConnectionSettings(baseURL: "https://127.0.0.1:\(sim.port)", trust: .caPEM(sim.caCertificatePEM), maxStreams: streams,
                               requestTimeoutMs: requestTimeoutMs, idleTimeoutMs: idleTimeoutMs)
        }
    }

    static func jobs(_ range: ClosedRange<Int>) -> [PushJob] {
        range.map { i in
            PushJob(index: i, request: PushRequest(token: try! DeviceToken.normalize(String(format: "%064x", i)).get(),
                                                   payload: Array(#"{"aps":{"alert":"hi \#(i)"}}"#.utf8),
                                                   apnsId: String(format: "00000000-0000-5000-8000-%012x", i), topic: bundle,
                                                   pushType: .alert, priority: 10, collapseId: "herald:test"))
        }
    }

    /// Submits in chunks as results come back, as the runner does; returns every result, or
    /// those that came before a minute passed without any (a halted sender answers no more).
    static func stream(_ sender: APNsSender, _ all: [PushJob], ahead: Int) -> [PushResult] {
        var next = 0
        var out: [PushResult] = []
        var lastProgress = Date()
        while out.count < all.count, Date().timeIntervalSince(lastProgress) < 60 {
            let room = ahead - (next - out.count)
            if room > 0 && next < all.count {
                let end = min(all.count, next + room)
                sender.submit(Array(all[next..<end]))
                next = end
            }
            let got = sender.results(timeout: 1)
            if !got.isEmpty { lastProgress = Date() }
            out += got
        }
        return out
    }

    @Test
    func anExpiredProviderTokenIsResignedOnceAndRetriedOnFreshConnections() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        // The first token is signed two hours in the past: APNs calls it expired.
        let calls = Atomic<Int>(0)
        let token = try f.token { calls.add(1, ordering: .relaxed).newValue == 1 ? Date().addingTimeInterval(-7200) : Date() }
        let sender = try APNsSender(settings: f.settings(streams: 20), connections: 2, token: token)
        let first = Self.stream(sender, Self.jobs(1...100), ahead: 100)
        // Requests that started after the first expiry already carry the new token. APNs allows one
        // stream until a request authenticates: the worker opens the connection before it takes
        // jobs, so each of its two connections starts one request with the old token and no more.
        let expired = first.filter { $0.outcome.reason == "ExpiredProviderToken" }
        #expect((1...2).contains(expired.count), "\(expired.count) expired")
        #expect(first.allSatisfy { $0.outcome.status == 200 || $0.outcome.reason == "ExpiredProviderToken" })
        let again = Self.stream(sender, Self.jobs(1...100).filter { j in expired.contains { $0.index == j.index } }, ahead: 100)
        sender.shutdown()
        #expect(again.allSatisfy { $0.outcome.status == 200 }, "\(again.filter { $0.outcome.status != 200 }.map(\.outcome).prefix(3))")
        #expect(token.signedCount == 2, "one new signature however many streams reported the expiry")
        let log = f.sim.requestLog.entries()
        let expiredOn = Set(log.filter { $0.reason == "ExpiredProviderToken" }.map(\.connection))
        let okOn = Set(log.filter { $0.status == 200 }.map(\.connection))
        #expect(expiredOn.isDisjoint(with: okOn), "the new token travels on new connections only")
        #expect(!log.contains { $0.reason == "TooManyProviderTokenUpdates" })
    }

    @Test
    func anIdleConnectionIsClosedAndReopenedWhenWorkComes() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let sender = try APNsSender(settings: f.settings(idleTimeoutMs: 300), connections: 1, token: try f.token())
        #expect(Self.stream(sender, Self.jobs(1...20), ahead: 20).allSatisfy { $0.outcome.status == 200 })
        // The worker closes the connection 300 ms after its last answer, with no new work to wake it.
        #expect(waitUntil(timeout: 10) { f.sim.requestLog.stats().connectionsClosed == 1 }, "the idle connection is closed")
        #expect(Self.stream(sender, Self.jobs(21...40), ahead: 20).allSatisfy { $0.outcome.status == 200 })
        sender.shutdown()
        #expect(Set(f.sim.requestLog.entries().map(\.connection)).count == 2)
        #expect(sender.counters.connectionsOpened == 2)
    }

    @Test
    func withdrawnJobsNeverLeaveAndAPauseHoldsNewRequests() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let sender = try APNsSender(settings: f.settings(), connections: 1, token: try f.token())
        let resumes = Date().addingTimeInterval(0.5)
        sender.pause(until: resumes)
        sender.submit(Self.jobs(1...30))
        // Waits up to 0.1 s for an answer (an absence needs a window); none may come.
        #expect(sender.results(timeout: 0.1).isEmpty && f.sim.requestLog.count == 0, "paused: nothing starts")
        #expect(Set(sender.withdrawQueued()) == Set(1...30))
        // One job submitted after the withdrawal: it waits out the pause, then leaves alone.
        let after = Self.stream(sender, Self.jobs(31...31), ahead: 1)
        #expect(Date() >= resumes, "the pause held the job until it ended")
        sender.shutdown()   // lets every request in flight finish: the log below is complete
        #expect(after.map(\.index) == [31] && after.allSatisfy { $0.outcome.status == 200 }, "\(after.map(\.outcome))")
        #expect(f.sim.requestLog.count == 1, "withdrawn jobs never leave")
    }

}

extension PushOutcome {
    var status: Int? { if case .answered(let s, _, _, _) = self { return s } else { return nil } }
    var reason: String? { if case .answered(_, _, let r, _) = self { return r?.rawValue } else { return nil } }
    var isTransportFailure: Bool { if case .transportFailure = self { return true } else { return false } }
}
