import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// `apns.proxy`: HTTP/2 over TLS to the simulator through a CONNECT tunnel of a real proxy on
/// 127.0.0.1 (ConnectProxy), which counts its tunnels.
@Suite(.serialized) struct ProxyTests {
    let key = TestKey()

    func simulator() throws -> APNsSimulator {
        var config = SimulatorConfiguration(teamId: TestKey.teamId, keyId: TestKey.keyId, publicKeyPEM: key.publicKeyPEM)
        config.bundleId = CertificateAuthTests.bundle
        return try APNsSimulator.start(config)
    }

    func settings(_ sim: APNsSimulator, proxy: ProxySettings?) -> ConnectionSettings {
        var s = ConnectionSettings(baseURL: "https://127.0.0.1:\(sim.port)", trust: .caPEM(sim.caCertificatePEM), maxStreams: 50)
        s.proxy = proxy
        return s
    }

    func token() throws -> ProviderToken {
        try ProviderToken(privateKeyPEM: key.privateKeyPEM, source: "test", teamId: TestKey.teamId, keyId: TestKey.keyId)
    }

    @Test func pushesReachTheSimulatorThroughOneTunnelPerConnection() throws {
        let sim = try simulator()
        defer { try? sim.shutdown() }
        let proxy = try ConnectProxy()
        defer { proxy.stop() }
        let sender = try APNsSender(settings: settings(sim, proxy: .http(proxy.url)), connections: 2, token: try token())
        // More requests than one connection's 50 streams, so both connections carry some.
        let results = try sender.send(CertificateAuthTests.requests(200))
        #expect(results.count == 200 && results.allSatisfy { $0.outcome.isOK }, "\(results.map(\.outcome))")
        #expect(sim.requestLog.count == 200)
        let opened = sender.counters.connectionsOpened
        #expect(opened >= 1 && opened <= 2)
        #expect(proxy.tunnels == opened, "each connection is one CONNECT tunnel (none went direct), reused for every stream")
        #expect(proxy.tunnelTargets.allSatisfy { $0 == "127.0.0.1:\(sim.port)" })
        // A second batch rides the same tunnels.
        _ = try sender.send(CertificateAuthTests.requests(10))
        #expect(proxy.tunnels == sender.counters.connectionsOpened && sender.counters.connectionsOpened == opened)
    }

    @Test func proxyCredentialsComeFromTheEnvironmentAndA407IsReported() throws {
        let sim = try simulator()
        defer { try? sim.shutdown() }
        let proxy = try ConnectProxy(credentials: ("herald", "pr0xy-secret"))
        defer { proxy.stop() }
        let spec = ProxySpec.http(url: proxy.url, userEnv: "PROXY_USER", passwordEnv: "PROXY_PASSWORD")
        let good = try ProxySettings.resolve(spec, environment: ["PROXY_USER": "herald", "PROXY_PASSWORD": "pr0xy-secret"])
        #expect(!"\(good)".contains("pr0xy-secret") && !String(reflecting: good).contains("pr0xy-secret"))
        #expect(ConnectionProbe.run(settings(sim, proxy: good)) == .accepted)
        let results = try APNsSender(settings: settings(sim, proxy: good), connections: 1, token: try token()).send(CertificateAuthTests.requests(5))
        #expect(results.allSatisfy { $0.outcome.isOK })

        let wrong = try ProxySettings.resolve(spec, environment: ["PROXY_USER": "herald", "PROXY_PASSWORD": "nope"])
        for refused in [ConnectionProbe.run(settings(sim, proxy: wrong)), ConnectionProbe.run(settings(sim, proxy: .http(proxy.url)))] {
            guard case .proxyRefused(let why, credentials: true) = refused else { Issue.record("\(refused)"); continue }
            #expect(why.contains("(HTTP 407)") && !why.contains("nope"), "\(why)")
        }
        #expect(throws: ProxyError.credentialsMissing(field: "password_env", variable: "PROXY_PASSWORD")) {
            try ProxySettings.resolve(spec, environment: ["PROXY_USER": "herald"])
        }
        #expect(sim.requestLog.entries().filter { $0.path.hasPrefix("/3/device/") }.count == 5)
    }

    @Test func aProxyThatIsNotListeningIsUnreachableNotRefused() throws {
        let sim = try simulator()
        defer { try? sim.shutdown() }
        let proxy = try ConnectProxy()
        let url = proxy.url
        proxy.stop()
        guard case .unreachable = ConnectionProbe.run(settings(sim, proxy: .http(url))) else {
            Issue.record("expected unreachable"); return
        }
    }
}
