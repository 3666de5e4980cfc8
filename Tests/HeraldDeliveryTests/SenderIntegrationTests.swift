import Foundation
import HeraldCore
import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// herald's sender against the in-process simulator: real TLS + HTTP/2 on 127.0.0.1.
@Suite(.serialized) struct SenderIntegrationTests {
    static let bundle = "com.example.app"

    struct Fixture {
        let key = TestKey()
        let sim: APNsSimulator
        let token: ProviderToken

        init(unregistered: [String] = [], bad: [String] = [], signingKey: TestKey? = nil) throws {
            var config = SimulatorConfiguration(teamId: TestKey.teamId, keyId: TestKey.keyId, publicKeyPEM: key.publicKeyPEM)
            config.bundleId = SenderIntegrationTests.bundle
            config.unregisteredPrefixes = unregistered
            config.badTokenPrefixes = bad
            sim = try APNsSimulator.start(config)
            token = try ProviderToken(privateKeyPEM: (signingKey ?? key).privateKeyPEM, source: "test",
                                      teamId: TestKey.teamId, keyId: TestKey.keyId)
        }

        func settings(trust: TLSTrust? = nil, streams: Int = 100) -> ConnectionSettings {
            ConnectionSettings(baseURL: "https://127.0.0.1:\(sim.port)", trust: trust ?? .caPEM(sim.caCertificatePEM), maxStreams: streams)
        }
    }

    static func requests(_ n: Int, prefix: String = "") -> [PushRequest] {
        (0..<n).map { i in
            let hex = prefix + String(format: "%0\(64 - prefix.count)x", i + 1)
            return PushRequest(token: try! DeviceToken.normalize(hex).get(), payload: Array(#"{"aps":{"alert":"hi \#(i)"}}"#.utf8),
                               apnsId: String(format: "00000000-0000-5000-8000-%012x", i), topic: bundle, pushType: .alert,
                               priority: 10, collapseId: "herald:test", expiration: nil)
        }
    }

    @Test func manyRequestsMultiplexOnOneHTTP2Connection() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let sender = try APNsSender(settings: f.settings(streams: 100), connections: 1, token: f.token)
        let reqs = Self.requests(300)
        let results = try sender.send(reqs)
        #expect(results.count == 300)
        #expect(Set(results.map(\.index)) == Set(0..<300))
        for r in results {
            #expect(r.httpVersion == 20)
            #expect(r.outcome == .answered(status: 200, apnsId: reqs[r.index].apnsId, reason: nil, timestamp: nil))
        }
        let log = f.sim.requestLog.entries()
        #expect(log.count == 300)
        #expect(Set(log.map(\.connection)).count == 1, "one connection, many streams")
        #expect(Set(log.map(\.stream)).count == 300)
        let first = try #require(log.first)
        #expect(first.headers["apns-topic"] == Self.bundle)
        #expect(first.headers["apns-push-type"] == "alert")
        #expect(first.headers["apns-priority"] == "10")
        #expect(first.headers["apns-collapse-id"] == "herald:test")
        #expect(log.allSatisfy { $0.otherHeaderNames == ["content-length"] }, "only Apple's headers")
        #expect(first.jwtKid == TestKey.keyId && first.jwtIss == TestKey.teamId)
        #expect(f.token.signedCount == 1, "one JWT for the whole batch")
    }

    @Test func rejectionsCarryStatusReasonAndTimestamp() throws {
        let f = try Fixture(unregistered: ["dead"], bad: ["badd"])
        defer { try? f.sim.shutdown() }
        let sender = try APNsSender(settings: f.settings(), connections: 1, token: f.token)
        let reqs = Self.requests(2, prefix: "dead") + Self.requests(2, prefix: "badd") + Self.requests(2)
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let results = try sender.send(reqs).sorted { $0.index < $1.index }
        for r in results[0..<2] {
            guard case .answered(410, _, let reason, let ts) = r.outcome else { Issue.record("\(r.outcome)"); continue }
            #expect(reason == "Unregistered")
            #expect((ts ?? 0) >= before - 1000)
        }
        for r in results[2..<4] {
            #expect(r.outcome == .answered(status: 400, apnsId: reqs[r.index].apnsId, reason: "BadDeviceToken", timestamp: nil))
        }
        for r in results[4..<6] {
            #expect(r.outcome == .answered(status: 200, apnsId: reqs[r.index].apnsId, reason: nil, timestamp: nil))
        }
    }

    @Test func aTokenSignedWithTheWrongKeyIsRejected() throws {
        let f = try Fixture(signingKey: TestKey())
        defer { try? f.sim.shutdown() }
        let sender = try APNsSender(settings: f.settings(), connections: 1, token: f.token)
        let results = try sender.send(Self.requests(3))
        // The first answer halts the sender (abort_campaign): the requests after it never leave.
        #expect(results.count >= 1 && f.sim.requestLog.count == results.count, "\(results.map(\.outcome))")
        for r in results {
            guard case .answered(403, _, let reason, _) = r.outcome else { Issue.record("\(r.outcome)"); continue }
            #expect(reason == "InvalidProviderToken")
            #expect(reason?.action == .abortCampaign)
        }
    }

    @Test func peerVerificationStaysOn() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        // The simulator's CA is not in the system store: the handshake must fail, not be waved through.
        let sender = try APNsSender(settings: f.settings(trust: .system), connections: 1, token: f.token)
        let results = try sender.send(Self.requests(1))
        guard case .transportFailure(let why) = results[0].outcome else { Issue.record("\(results[0].outcome)"); return }
        #expect(why.kind == .tlsTrust && why.detail.lowercased().contains("certificate"), "\(why)")
        #expect(f.sim.requestLog.count == 0)
    }

    @Test func severalConnectionsShareOneJWTAndKeepIndices() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let sender = try APNsSender(settings: f.settings(streams: 50), connections: 3, token: f.token)
        let reqs = Self.requests(150)
        let results = try sender.send(reqs)
        #expect(results.count == 150)
        for r in results {
            #expect(r.outcome == .answered(status: 200, apnsId: reqs[r.index].apnsId, reason: nil, timestamp: nil))
        }
        let log = f.sim.requestLog.entries()
        // A connection holds at most its 50 streams, so 150 requests need more than one; a third
        // may find the queue already empty.
        #expect(Set(log.map(\.connection)).count >= 2 && Dictionary(grouping: log, by: \.connection).values.allSatisfy { $0.count <= 150 })
        #expect(Set(log.compactMap(\.jwtIat)).count == 1)
        #expect(f.token.signedCount == 1)
    }

    @Test func refusedConnectionIsATransportFailure() throws {
        // A port nothing listens on (the simulator's, after shutdown).
        let f = try Fixture()
        let port = f.sim.port
        try f.sim.shutdown()
        let settings = ConnectionSettings(baseURL: "https://127.0.0.1:\(port)", trust: .caPEM(f.sim.caCertificatePEM), maxStreams: 10)
        let sender = try APNsSender(settings: settings, connections: 1, token: f.token)
        let results = try sender.send(Self.requests(2))
        #expect(results.count == 2)
        for r in results {
            guard case .transportFailure = r.outcome else { Issue.record("\(r.outcome)"); continue }
        }
    }
}
