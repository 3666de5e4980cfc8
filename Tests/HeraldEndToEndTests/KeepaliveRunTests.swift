import Foundation
import HeraldSimulator
import HeraldTestSupport
import Testing

/// `herald run` through a TCP relay that turns into a black hole mid-run (TCPRelay): herald's
/// connection stays open and hears nothing more. With `apns.ping_interval: 1s` and
/// `apns.ping_timeout: 1s` herald notices by PING, gives the connection up, reconnects (the relay
/// forwards new connections), resends what was in flight with the same apns-id, and every
/// recipient ends `sent`, once. The request timeout is ten minutes: without the PING the run would
/// wait that long, far past the test's bound.
@Suite(.serialized) struct KeepaliveRunTests {
    let dir = TemporaryDirectory("e2e-keepalive")
    static let recipients = 200

    static func token(_ i: Int) -> String { String(format: "%064x", i) }

    /// Every recipient sent on one connection that PINGs every second.
    func writeJob(key: TestKey) throws -> JobFile {
        let keyFile = try key.writeP8(in: dir)
        return try TestJob("job", tokens: (1...Self.recipients).map(Self.token)) {
            $0.campaign = "keepalive-test"
            $0.apns.endpoint = "production"
            $0.apns.keyFile = keyFile
            $0.apns.connections = 1
            $0.apns.streamsPerConnection = 10
            $0.apns.requestTimeout = "10m"
            $0.apns.pingInterval = "1s"
            $0.apns.pingTimeout = "1s"
        }.write(in: dir)
    }

    @Test func aConnectionSwallowedMidRunIsNoticedByPingAndEveryRecipientIsSentOnce() throws {
        let key = TestKey()
        var config = SimulatorConfiguration(teamId: TestKey.teamId, keyId: TestKey.keyId, publicKeyPEM: key.publicKeyPEM)
        config.bundleId = "com.example.app"
        // 10 streams at 100 ms: about 2 s of sending, so the black hole falls in the middle.
        config.faults.latencyMs = 100
        let sim = try APNsSimulator.start(config)
        defer { try? sim.shutdown() }
        let relay = try TCPRelay(to: sim.port)
        defer { relay.stop() }
        let job = try writeJob(key: key)
        let ca = try dir.write("ca.pem", sim.caCertificatePEM)

        let herald = try Herald().spawn(["run", job.path, "--endpoint", relay.url, "--ca-file", ca],
                                        stdout: dir.file("stdout"), stderr: dir.file("stderr"))
        // A herald still waiting on the black hole (when the test fails) would wait out its
        // request timeout even when asked to stop.
        defer { if herald.isRunning { kill(herald.processIdentifier, SIGKILL); herald.waitUntilExit() } }

        let midRun = waitUntil(timeout: 30) { sim.requestLog.stats().answered >= 50 || !herald.isRunning }
        #expect(midRun && herald.isRunning, "herald was still sending after 50 answers")
        let swallowed = relay.blackHole()
        let holedAt = Date()
        #expect(swallowed >= 1)
        let finished = waitUntil(timeout: 40, pollInterval: 0.05) { !herald.isRunning }
        let output = ((try? String(contentsOfFile: dir.file("stdout"), encoding: .utf8)) ?? "") + ((try? String(contentsOfFile: dir.file("stderr"), encoding: .utf8)) ?? "")
        #expect(finished, "herald still running 40 s after the black hole; it should notice within 2 s by PING")
        guard finished else { return }
        #expect(herald.terminationStatus == 0, "\(output)")
        #expect(Date().timeIntervalSince(holedAt) < 20, "the run ended \(Date().timeIntervalSince(holedAt)) s after the black hole")
        #expect(relay.accepted > swallowed, "a new connection after the black hole")

        let rows = try ReportCheck.csv(dir.file("reports/keepalive-test/deliveries.csv"))
        #expect(rows.count == Self.recipients && Set(rows.compactMap { $0["token"] }) == Set((1...Self.recipients).map(Self.token)))
        #expect(rows.allSatisfy { $0["status"] == "sent" }, "\(rows.filter { $0["status"] != "sent" }.prefix(3))")
        #expect(rows.contains { Int($0["attempts"] ?? "") ?? 0 >= 2 }, "the requests the black hole swallowed were sent again")

        // Every token answered 200 by the simulator; a token it saw twice (its answer eaten by the
        // black hole) was resent with the same apns-id.
        let byToken = Dictionary(grouping: sim.requestLog.entries().filter { $0.path.hasPrefix("/3/device/") }, by: { $0.token ?? "" })
        #expect(Set(byToken.keys) == Set((1...Self.recipients).map(Self.token)))
        #expect(byToken.values.allSatisfy { $0.last?.status == 200 })
        #expect(byToken.values.allSatisfy { Set($0.compactMap { $0.headers["apns-id"] }).count == 1 }, "a resend reuses its apns-id")
    }
}
