import Foundation
import HeraldTestSupport
import Testing

/// `herald run` through a SOCKS5 proxy on 127.0.0.1 (Socks5Proxy) to `herald sim`, on the nghttp2
/// engine: from `apns.proxy` with RFC 1929 credentials, from the environment as libcurl reads it
/// (all_proxy, no_proxy), and an `https://` proxy refused before anything is read.
@Suite(.serialized) struct SocksProxyRunTests {
    let run = CertificateAndProxyRunTests()
    static let unset: [String: String?] = ["https_proxy": "", "HTTPS_PROXY": "", "all_proxy": "", "ALL_PROXY": "", "no_proxy": "", "NO_PROXY": ""]

    /// The simulator, dialled by name: socks5h then has a name to hand the proxy.
    func startSimulator(_ key: TestKey) throws -> (SimulatorProcess, String) {
        let sim = try SimulatorProcess(in: run.dir, trusting: key)
        return (sim, sim.url.replacingOccurrences(of: "//127.0.0.1:", with: "//localhost:"))
    }

    /// `herald run` against the simulator at `url`.
    func send(_ job: JobFile, url: String, sim: SimulatorProcess, env: [String: String?]) throws -> RunResult {
        try run.herald.run(job, ["--endpoint", url, "--ca-file", sim.caFile], environment: env)
    }

    @Test func socks5hWithCredentialsFromTheJobAndARefusalThatIsExitTwo() throws {
        let key = TestKey()
        let (sim, url) = try startSimulator(key)
        defer { sim.stop() }
        let proxy = try Socks5Proxy(credentials: ("herald", "s0cks-s3cret"))
        defer { proxy.stop() }
        let keyFile = try key.writeP8(in: run.dir)
        let job = try run.writeJob {
            $0.keyFile = keyFile
            $0.proxy = "{ url: \(proxy.url("socks5h")), user_env: HERALD_TEST_PROXY_USER, password_env: HERALD_TEST_PROXY_PASSWORD }"
        }
        let refused = try send(job, url: url, sim: sim, env: Self.unset.merging(["HERALD_TEST_PROXY_USER": "herald", "HERALD_TEST_PROXY_PASSWORD": "not-it-42"]) { _, new in new })
        #expect(refused.status == 2, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("apns.proxy \(proxy.url("socks5h")) refused the tunnel to APNs: "), "\(refused.stderr)")
        #expect(refused.stderr.contains("the SOCKS5 proxy refused the username and password (RFC 1929 status 0x01): it wants credentials "
                                        + "(apns.proxy user_env and password_env), or refused the ones given. Nothing was sent"), "\(refused.stderr)")
        #expect(!(refused.stdout + refused.stderr).contains("not-it-42"))
        #expect(proxy.tunnels == 0 && run.requestLog().isEmpty)

        let r = try send(job, url: url, sim: sim, env: Self.unset.merging(["HERALD_TEST_PROXY_USER": "herald", "HERALD_TEST_PROXY_PASSWORD": "s0cks-s3cret"]) { _, new in new })
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(try run.counts()["sent"] == CertificateAndProxyRunTests.recipients)
        #expect(run.requestLog().count == CertificateAndProxyRunTests.recipients, "every push reached the simulator")
        // The pre-flight tunnel and the campaign's connection, each naming the host for the proxy to resolve.
        #expect(proxy.requests.count == 2 && proxy.requests.allSatisfy { $0.addressType == 3 && $0.address == "localhost" }, "\(proxy.requests)")
        #expect(!(r.stdout + r.stderr).contains("s0cks-s3cret"))
    }

    @Test func allProxyFromTheEnvironmentUnlessNoProxyListsTheHost() throws {
        run.forgetEarlierRuns()
        let key = TestKey()
        let (sim, url) = try startSimulator(key)
        defer { sim.stop() }
        let proxy = try Socks5Proxy()
        defer { proxy.stop() }
        let keyFile = try key.writeP8(in: run.dir)
        let job = try run.writeJob { $0.keyFile = keyFile; $0.engine = "nghttp2" }
        let viaProxy = try send(job, url: url, sim: sim, env: Self.unset.merging(["all_proxy": proxy.url("socks5")]) { _, new in new })
        #expect(viaProxy.status == 0, "\(viaProxy.stdout)\(viaProxy.stderr)")
        #expect(try run.counts()["sent"] == CertificateAndProxyRunTests.recipients)
        // socks5://: herald resolved the name and handed the proxy an address.
        #expect(proxy.requests.map(\.description) == ["ATYP 1 127.0.0.1:\(URLComponents(string: url)!.port!)"], "\(proxy.requests)")

        for d in ["state", "reports"] { try? FileManager.default.removeItem(atPath: run.dir.file(d)) }
        let exempt = try send(job, url: url, sim: sim, env: Self.unset.merging(["all_proxy": proxy.url("socks5"), "no_proxy": "localhost"]) { _, new in new })
        #expect(exempt.status == 0, "\(exempt.stdout)\(exempt.stderr)")
        #expect(try run.counts()["sent"] == CertificateAndProxyRunTests.recipients)
        #expect(proxy.tunnels == 1, "no_proxy lists the host: no tunnel")
        #expect(run.requestLog().count == 2 * CertificateAndProxyRunTests.recipients)
    }

    @Test func anHttpsProxyIsRefusedBeforeAnythingIsRead() throws {
        run.forgetEarlierRuns()
        let key = TestKey()
        let keyFile = try key.writeP8(in: run.dir)
        let job = try run.writeJob { $0.keyFile = keyFile; $0.proxy = "https://proxy.internal:8443" }
        let schemes = "use http://, socks5:// or socks5h://"
        for command in [["validate", job.path], ["run", job.path]] {
            let r = try run.herald(command)
            #expect(r.status == 2, "\(command[0]): \(r.stdout)\(r.stderr)")
            #expect(r.stderr.contains("\(job.path) line \(try job.line(of: "  proxy:")): apns.proxy: https:// proxies are not supported; \(schemes)"), "\(command[0]): \(r.stderr)")
        }
        // From the environment: refused as the run starts, before the audience or the state is opened.
        let fromEnvironment = try run.writeJob { $0.keyFile = keyFile }
        let r = try run.herald.run(fromEnvironment, environment: Self.unset.merging(["HTTPS_PROXY": "https://u:pw@proxy.internal:8443"]) { _, new in new })
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("\(fromEnvironment.path): the environment's HTTPS_PROXY: https:// proxies are not supported; \(schemes)"), "\(r.stderr)")
        #expect(!(r.stdout + r.stderr).contains("pw@"))
        #expect(!FileManager.default.fileExists(atPath: run.dir.file("reports/connect-test/deliveries.csv")), "stopped before the state file was opened")
    }
}
