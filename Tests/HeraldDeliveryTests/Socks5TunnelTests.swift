import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// The sender through a SOCKS5 proxy (Socks5Proxy, on 127.0.0.1) to the in-process
/// simulator: socks5:// sends the address herald resolved, socks5h:// the name; RFC 1929
/// credentials when the job gives them; every refusal typed and worded, never with the password.
@Suite(.serialized) struct Socks5TunnelTests {
    typealias Fixture = StreamingSenderTests.Fixture
    static let password = "s0cks-s3cret"

    /// The simulator by name (`localhost`, in its certificate), so socks5h has a name to pass on.
    static func settings(_ f: Fixture, proxy url: String, user: String? = nil, password: String? = nil, streams: Int = 20,
                         host: String = "localhost") throws -> ConnectionSettings {
        var settings = ConnectionSettings(baseURL: "https://\(host):\(f.sim.port)", trust: .caPEM(f.sim.caCertificatePEM), maxStreams: streams,
                                          connectTimeoutMs: 5_000)
        let env = ["U": user, "P": password].compactMapValues { $0 }
        settings.proxy = try ProxySettings.resolve(.socks(url: url, userEnv: user == nil ? nil : "U", passwordEnv: password == nil ? nil : "P"),
                                                   environment: env)
        return settings
    }

    static func send(_ f: Fixture, _ settings: ConnectionSettings, count: Int, connections: Int = 1) throws -> [PushResult] {
        let sender = try APNsSender(settings: settings, connections: connections, token: try f.token())
        let results = StreamingSenderTests.stream(sender, StreamingSenderTests.jobs(1...count), ahead: 40)
        sender.shutdown()
        return results
    }

    @Test(arguments: ["socks5", "socks5h"])
    func pushesGoThroughWithoutCredentials(_ scheme: String) throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let proxy = try Socks5Proxy()
        defer { proxy.stop() }
        let results = try Self.send(f, try Self.settings(f, proxy: proxy.url(scheme)), count: 100, connections: 2)
        #expect(results.count == 100 && results.allSatisfy { $0.outcome.status == 200 }, "\(Set(results.map { "\($0.outcome)" }))")
        #expect(f.sim.requestLog.count == 100)
        #expect(proxy.tunnels == 2, "one tunnel per connection: \(proxy.requests)")
        #expect(proxy.offeredMethods == [[0x00], [0x00]], "only \"no authentication\" without credentials: \(proxy.offeredMethods)")
        // socks5: herald resolved localhost and sent an address; socks5h: the name, for the proxy to resolve.
        let expected = scheme == "socks5" ? Socks5Proxy.Request(addressType: 1, address: "127.0.0.1", port: f.sim.port)
                                          : Socks5Proxy.Request(addressType: 3, address: "localhost", port: f.sim.port)
        #expect(proxy.requests == [expected, expected], "\(proxy.requests)")
    }

    @Test(arguments: ["socks5", "socks5h"])
    func credentialsGoToTheProxyAsRFC1929(_ scheme: String) throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let proxy = try Socks5Proxy(credentials: ("herald", Self.password))
        defer { proxy.stop() }
        let settings = try Self.settings(f, proxy: proxy.url(scheme), user: "herald", password: Self.password)
        #expect("\(settings.proxy!)" == "proxy \(proxy.url(scheme)) (with credentials)")
        let results = try Self.send(f, settings, count: 50)
        #expect(results.count == 50 && results.allSatisfy { $0.outcome.status == 200 }, "\(Set(results.map { "\($0.outcome)" }))")
        #expect(proxy.tunnels == 1 && proxy.refused == 0 && proxy.offeredMethods == [[0x02]], "\(proxy.offeredMethods)")
        #expect(ConnectionProbe.run(settings) == .accepted)
    }

    @Test func wrongCredentialsAreARefusalThatNamesTheProxyButNotThePassword() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let proxy = try Socks5Proxy(credentials: ("herald", Self.password))
        defer { proxy.stop() }
        let settings = try Self.settings(f, proxy: proxy.url("socks5h"), user: "herald", password: "not-it-42")
        let results = try Self.send(f, settings, count: 3)
        #expect(results.count == 3)
        for r in results {
            guard case .transportFailure(let why) = r.outcome else { Issue.record("\(r.outcome)"); continue }
            #expect(why.kind == .proxyCredentials && why.detail.contains("via socks5h://127.0.0.1:\(proxy.port) (with credentials)")
                    && why.detail.contains("the SOCKS5 proxy refused the username and password (RFC 1929 status 0x01)"), "\(why)")
            #expect(!why.detail.contains("not-it-42") && !why.detail.contains(Self.password), "\(why)")
        }
        #expect(proxy.refused >= 1 && proxy.tunnels == 0 && f.sim.requestLog.count == 0)
        guard case .proxyRefused(let why, credentials: true) = ConnectionProbe.run(settings) else { Issue.record("not a credentials refusal"); return }
        #expect(why.contains("refused the username and password") && !why.contains("not-it-42"), "\(why)")
    }

    @Test func aProxyThatWantsCredentialsSaysSoWhenNoneAreGiven() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let proxy = try Socks5Proxy(credentials: ("herald", Self.password))
        defer { proxy.stop() }
        let outcome = ConnectionProbe.run(try Self.settings(f, proxy: proxy.url("socks5")))
        guard case .proxyRefused(let why, credentials: true) = outcome else { Issue.record("\(outcome)"); return }
        #expect(why.contains("the SOCKS5 proxy accepts none of the authentication methods offered (no authentication"), "\(why)")
        #expect(proxy.offeredMethods == [[0x00]])
    }

    /// The proxy's reply code in RFC 1928 §6's words: the simulator's name is left to the proxy
    /// (socks5h), which allows only loopback targets.
    @Test func aTargetTheProxyRefusesIsNamedWithTheReplyInWords() throws {
        let f = try Fixture()
        defer { try? f.sim.shutdown() }
        let proxy = try Socks5Proxy()
        defer { proxy.stop() }
        let outcome = ConnectionProbe.run(try Self.settings(f, proxy: proxy.url("socks5h"), host: "apns.example"))
        guard case .proxyRefused(let why, credentials: false) = outcome else { Issue.record("\(outcome)"); return }
        #expect(why.hasSuffix(": the SOCKS5 proxy refused to connect to apns.example:\(f.sim.port): connection not allowed by ruleset (reply 2)"), "\(why)")
        #expect(proxy.requests == [Socks5Proxy.Request(addressType: 3, address: "apns.example", port: f.sim.port)])
    }
}
