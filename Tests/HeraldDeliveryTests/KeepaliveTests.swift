import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// HTTP/2 PING on herald's connection (`apns.ping_interval`, `apns.ping_timeout`), against the
/// in-process simulator over TLS on 127.0.0.1: a silent connection is pinged and kept, and one
/// that a black hole swallowed (TCPRelay) is given up and replaced, every job answered.
@Suite(.serialized) struct KeepaliveTests {
    typealias Fixture = StreamingSenderTests.Fixture

    static func settings(_ f: Fixture, baseURL: String, streams: Int, requestTimeoutMs: Int, pingIntervalMs: Int, pingTimeoutMs: Int) -> ConnectionSettings {
        var s = ConnectionSettings(baseURL: baseURL, trust: .caPEM(f.sim.caCertificatePEM), maxStreams: streams, requestTimeoutMs: requestTimeoutMs)
        s.pingIntervalMs = pingIntervalMs
        s.pingTimeoutMs = pingTimeoutMs
        return s
    }

    /// A connection left idle gets one PING per interval (the ACK is a frame from the server, so
    /// the next PING waits a whole interval again), and, answered, stays the connection: the next
    /// jobs go out on it.
    @Test func anIdleConnectionIsPingedOncePerIntervalAndKept() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let sender = try APNsSender(settings: Self.settings(f, baseURL: "https://127.0.0.1:\(f.sim.port)", streams: 10, requestTimeoutMs: 10_000,
                                                            pingIntervalMs: 1_000, pingTimeoutMs: 2_000),
                                    connections: 1, token: try f.token())
        defer { sender.shutdown() }
        let first = StreamingSenderTests.stream(sender, StreamingSenderTests.jobs(1...3), ahead: 3)
        #expect(first.count == 3 && first.allSatisfy { $0.outcome.status == 200 })
        let quietFrom = Date()
        #expect(waitUntil(timeout: 10) { f.sim.requestLog.pings().count >= 2 }, "two PINGs within 10 s of quiet at a 1 s interval")
        let pings = f.sim.requestLog.pings()
        try #require(pings.count >= 2)
        #expect(f.sim.requestLog.stats().pings == pings.count)
        #expect(pings.allSatisfy { $0.connection == 1 })
        #expect(pings[0].time.timeIntervalSince(quietFrom) > 0.5, "not before the interval: \(pings[0].time.timeIntervalSince(quietFrom)) s")
        #expect(pings[1].time.timeIntervalSince(pings[0].time) > 0.5, "one PING per interval, not per turn")

        let second = StreamingSenderTests.stream(sender, StreamingSenderTests.jobs(4...6), ahead: 3)
        #expect(second.count == 3 && second.allSatisfy { $0.outcome.status == 200 })
        #expect(sender.counters.connectionsOpened == 1, "the answered PINGs kept the connection")
        #expect(Set(f.sim.requestLog.entries().map(\.connection)) == [1])
    }

    /// Mid-run, the relay between herald and the simulator turns into a black hole: the connection
    /// stays open, nothing arrives. The request timeout is two minutes, so only the PING can notice
    /// within the test's bound: no frame for 1 s, a PING, no ACK for 1 s, and the connection is
    /// given up; its streams come back as lost, are resent (as the runner does, same apns-id) on a
    /// new connection the relay forwards, and every job ends answered 200, once.
    @Test func aBlackHoledConnectionIsGivenUpAfterAnUnansweredPingAndEveryJobIsAnswered() throws {
        let f = try Fixture { $0.faults.latencyMs = 100 }
        defer { try? f.sim.shutdown() }
        let relay = try TCPRelay(to: f.sim.port)
        defer { relay.stop() }
        let sender = try APNsSender(settings: Self.settings(f, baseURL: relay.url, streams: 20, requestTimeoutMs: 120_000,
                                                            pingIntervalMs: 1_000, pingTimeoutMs: 1_000),
                                    connections: 1, token: try f.token())
        // The relay first: closing its sockets ends a connection still swallowed (when the test
        // fails), so the sender's shutdown does not wait out the request timeout.
        defer { relay.stop(); sender.shutdown() }
        let all = StreamingSenderTests.jobs(1...300)
        let byIndex = Dictionary(uniqueKeysWithValues: all.map { ($0.index, $0) })

        var final: [Int: PushResult] = [:]
        var lost: [PushResult] = []
        var queue = all[...]
        var inFlight = 0
        var holedAt: Date?
        var firstLossAt: Date?
        let deadline = Date().addingTimeInterval(30)
        while final.count < all.count, Date() < deadline {
            if inFlight < 40, !queue.isEmpty {
                let batch = Array(queue.prefix(40 - inFlight))
                queue = queue.dropFirst(batch.count)
                inFlight += batch.count
                sender.submit(batch)
            }
            if holedAt == nil, f.sim.requestLog.count >= 60 {
                #expect(relay.blackHole() == 1, "one connection to swallow")
                holedAt = Date()
            }
            for r in sender.results(timeout: 0.05) {
                inFlight -= 1
                if r.outcome.isTransportFailure {
                    lost.append(r)
                    if firstLossAt == nil { firstLossAt = Date() }
                    queue.append(byIndex[r.index]!)
                } else {
                    #expect(final[r.index] == nil, "job \(r.index) answered twice")
                    final[r.index] = r
                }
            }
        }
        #expect(final.count == all.count, "\(final.count) of \(all.count) answered within 30 s (\(lost.count) lost)")
        #expect(final.values.allSatisfy { $0.outcome.status == 200 })
        let holed = try #require(holedAt)
        let noticed = try #require(firstLossAt, "the black-holed connection was never given up")
        #expect(noticed.timeIntervalSince(holed) < 5, "noticed \(noticed.timeIntervalSince(holed)) s after the black hole (interval 1 s + timeout 1 s)")
        #expect(!lost.isEmpty && lost.allSatisfy { r in
            if case .transportFailure(let why) = r.outcome { return why.kind == .connectionLost && why.detail.contains("no answer to an HTTP/2 PING within 1000 ms") }
            return false
        }, "\(lost.prefix(3).map(\.outcome))")
        #expect(sender.counters.connectionsOpened == 2 && relay.accepted == 2, "one new connection after the black hole")

        // The simulator processed each job; twice only for a job whose answer the black hole ate
        // (resent with the same apns-id).
        let answered = f.sim.requestLog.entries().filter { $0.status == 200 }
        #expect(Set(answered.compactMap(\.apnsId)) == Set(all.map(\.request.apnsId)))
        let lostIds = Set(lost.map { byIndex[$0.index]!.request.apnsId })
        let twice = Dictionary(grouping: answered.compactMap(\.apnsId), by: { $0 }).filter { $0.value.count > 1 }.keys
        #expect(twice.allSatisfy { lostIds.contains($0) })
    }
}
