import Foundation
import HeraldSimulator
import HeraldTestSupport
import Testing

/// `herald run` with `apns.certificate` against `herald sim --client-ca`, and with `apns.proxy`
/// through a CONNECT proxy on 127.0.0.1: exit codes, messages, and secrets kept out of both.
@Suite(.serialized) struct CertificateAndProxyRunTests {
    let dir = TemporaryDirectory("e2e-connect")
    static let recipients = 25

    let herald = Herald()

    /// A clean slate for a test that runs several campaigns: no state, reports or request log.
    func forgetEarlierRuns() {
        for d in ["state", "reports", "sim"] { try? FileManager.default.removeItem(atPath: dir.file(d)) }
    }

    /// 25 recipients sent to `herald sim` (`--endpoint`), with what `configure` sets in `apns`.
    func writeJob(_ configure: (inout TestJob.APNs) -> Void) throws -> JobFile {
        try TestJob("job", tokens: (1...Self.recipients).map { String(format: "%064x", $0) }) {
            $0.campaign = "connect-test"
            $0.apns.endpoint = "production"
            $0.apns.streamsPerConnection = 10
            configure(&$0.apns)
            $0.retry.maxAttempts = 2
        }.write(in: dir)
    }

    func requestLog() -> [[String: Any]] {
        let text = (try? String(contentsOfFile: dir.file("sim/requests.ndjson"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { ($0["path"] as? String)?.hasPrefix("/3/device/") == true }   // not the probe's HEAD /
    }

    func counts() throws -> [String: Int] {
        let data = try Data(contentsOf: URL(fileURLWithPath: dir.file("reports/connect-test/summary.json")))
        return (try JSONSerialization.jsonObject(with: data) as! [String: Any])["counts"] as! [String: Int]
    }

    func run(_ job: JobFile, sim: SimulatorProcess, env: [String: String?]) throws -> RunResult {
        try herald.run(job, sim.endpointArguments, environment: env)
    }

    @Test func aP12CertificateSendsEveryPushWithoutAuthorization() throws {
        let ca = try SimulatorCertificateAuthority(commonName: "e2e client CA")
        let sim = try SimulatorProcess(in: dir, arguments: ["--client-ca", try dir.write("client-ca.pem", ca.certificatePEM)])
        defer { sim.stop() }
        let files = try ClientCertificateFiles(issuedBy: ca, name: "app", in: dir)
        let job = try writeJob { $0.certificate = "{ p12_file: \(files.p12), password_env: HERALD_TEST_P12_PASSWORD }" }
        let r = try run(job, sim: sim, env: ["HERALD_TEST_P12_PASSWORD": files.password])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(try counts()["sent"] == Self.recipients)
        let log = requestLog()
        #expect(log.count == Self.recipients)
        #expect(log.allSatisfy { (($0["headers"] as? [String: Any]) ?? [:])["authorization"] == nil }, "no authorization header with a certificate")
        #expect(!(r.stdout + r.stderr).contains(files.password))
        #expect(!(try String(contentsOfFile: dir.file("reports/connect-test/deliveries.csv"), encoding: .utf8)).contains(files.password))
    }

    @Test func aCertificateFromAnotherCAAbortsWithExitThreeBeforeAnyPush() throws {
        let ca = try SimulatorCertificateAuthority(commonName: "e2e client CA")
        let sim = try SimulatorProcess(in: dir, arguments: ["--client-ca", try dir.write("client-ca.pem", ca.certificatePEM)])
        defer { sim.stop() }
        let stranger = try ClientCertificateFiles(issuedBy: try SimulatorCertificateAuthority(commonName: "other CA"), name: "intruder", in: dir)
        let job = try writeJob { $0.certificate = "{ cert_file: \(stranger.certificate), key_file: \(stranger.key) }" }
        let r = try run(job, sim: sim, env: [:])
        #expect(r.status == 3, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("APNs refused the client certificate \(stranger.certificate) (apns.certificate)"), "\(r.stderr)")
        #expect(requestLog().isEmpty)
        let c = try counts()
        #expect(c["pending"] == Self.recipients && c["sent"] == 0 && c["failed"] == 0, "\(c)")
    }

    @Test func aWrongPasswordIsExitTwoNamingTheFieldNotThePassword() throws {
        let ca = try SimulatorCertificateAuthority(commonName: "e2e client CA")
        let files = try ClientCertificateFiles(issuedBy: ca, name: "app", in: dir)
        let job = try writeJob { $0.certificate = "{ p12_file: \(files.p12), password_env: HERALD_TEST_P12_PASSWORD }" }
        let wrong = "wr0ng-passw0rd-xyz"
        let r = try herald.run(job, environment: ["HERALD_TEST_P12_PASSWORD": wrong])
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("apns.certificate.password_env: the password in $HERALD_TEST_P12_PASSWORD does not open \(files.p12)"), "\(r.stderr)")
        #expect(!(r.stdout + r.stderr).contains(wrong))
        #expect(!FileManager.default.fileExists(atPath: dir.file("reports/connect-test/deliveries.csv")), "stopped before the state file was opened")
    }

    @Test
    func pushesGoThroughTheProxyTunnelAndProxyCredentialsStaySecret() throws {
        forgetEarlierRuns()
        let key = TestKey()
        let sim = try SimulatorProcess(in: dir, trusting: key)
        defer { sim.stop() }
        let proxy = try ConnectProxy(credentials: ("herald", "pr0xy-s3cret"))
        defer { proxy.stop() }
        let keyFile = try key.writeP8(in: dir)
        let job = try writeJob {
            $0.keyFile = keyFile
            $0.proxy = "{ url: \(proxy.url), user_env: HERALD_TEST_PROXY_USER, password_env: HERALD_TEST_PROXY_PASSWORD }"
        }
        // Wrong credentials: the tunnel is refused before any push, exit 2, the password nowhere.
        let refused = try run(job, sim: sim, env: ["HERALD_TEST_PROXY_USER": "herald", "HERALD_TEST_PROXY_PASSWORD": "not-it-42"])
        #expect(refused.status == 2, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("apns.proxy \(proxy.url) refused the tunnel to APNs: "), "\(refused.stderr)")
        #expect(refused.stderr.contains("(HTTP 407): it wants credentials"), "\(refused.stderr)")
        #expect(!(refused.stdout + refused.stderr).contains("not-it-42"))
        #expect(proxy.tunnels == 0 && requestLog().isEmpty)

        let r = try run(job, sim: sim, env: ["HERALD_TEST_PROXY_USER": "herald", "HERALD_TEST_PROXY_PASSWORD": "pr0xy-s3cret"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(try counts()["sent"] == Self.recipients)
        #expect(requestLog().count == Self.recipients, "every push reached the simulator")
        // One tunnel for the probe, one for the campaign's connection.
        #expect(proxy.tunnels == 2, "\(proxy.tunnels) tunnels")
        #expect(!(r.stdout + r.stderr).contains("pr0xy-s3cret"))
    }

    /// Without `apns.proxy`, the environment decides as libcurl would: https_proxy carries the
    /// pushes unless no_proxy lists the host; without it they go direct.
    @Test
    func withoutTheKeyTheEnvironmentsHttpsProxyIsUsedAndOtherwiseNone() throws {
        forgetEarlierRuns()
        let key = TestKey()
        let sim = try SimulatorProcess(in: dir, trusting: key)
        defer { sim.stop() }
        let proxy = try ConnectProxy()
        defer { proxy.stop() }
        let keyFile = try key.writeP8(in: dir)
        let job = try writeJob { $0.keyFile = keyFile }
        let unset: [String: String?] = ["https_proxy": "", "HTTPS_PROXY": "", "all_proxy": "", "ALL_PROXY": "", "no_proxy": "", "NO_PROXY": ""]
        let viaProxy = try run(job, sim: sim, env: unset.merging(["https_proxy": proxy.url]) { _, new in new })
        #expect(viaProxy.status == 0, "\(viaProxy.stdout)\(viaProxy.stderr)")
        #expect(try counts()["sent"] == Self.recipients)
        #expect(proxy.tunnels == 1, "the campaign's connection (no probe without apns.proxy): \(proxy.tunnels)")

        try? FileManager.default.removeItem(atPath: dir.file("state"))
        try? FileManager.default.removeItem(atPath: dir.file("reports"))
        let direct = try run(job, sim: sim, env: unset)
        #expect(direct.status == 0, "\(direct.stdout)\(direct.stderr)")
        #expect(try counts()["sent"] == Self.recipients)
        #expect(proxy.tunnels == 1, "no tunnel without a proxy in the environment")

        try? FileManager.default.removeItem(atPath: dir.file("state"))
        try? FileManager.default.removeItem(atPath: dir.file("reports"))
        let exempt = try run(job, sim: sim, env: unset.merging(["https_proxy": proxy.url, "no_proxy": "localhost,127.0.0.1"]) { _, new in new })
        #expect(exempt.status == 0, "\(exempt.stdout)\(exempt.stderr)")
        #expect(try counts()["sent"] == Self.recipients)
        #expect(proxy.tunnels == 1, "no_proxy lists the host: no tunnel")
        #expect(requestLog().count == 3 * Self.recipients)
    }
}
