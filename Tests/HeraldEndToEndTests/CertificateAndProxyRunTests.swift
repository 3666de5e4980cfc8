import Foundation
import HeraldSimulator
import HeraldTestSupport
import Testing

/// `herald run` with `apns.certificate` against `herald sim --client-ca`, and with `apns.proxy`
/// through a CONNECT proxy on 127.0.0.1: exit codes, messages, and secrets kept out of both.
@Suite(.serialized) struct CertificateAndProxyRunTests {
    let dir = TemporaryDirectory("e2e-connect")
    static let recipients = 25

    func startSimulator(_ auth: [String]) throws -> (BackgroundProcess, String) {
        try FileManager.default.createDirectory(atPath: dir.file("sim"), withIntermediateDirectories: true)
        let sim = try BackgroundProcess(ProcessRunner.heraldBinary, [
            "sim", "--port", "0", "--bundle-id", "com.example.app", "--ca-out", dir.file("sim/ca.pem"),
            "--log", dir.file("sim/requests.ndjson"),
        ] + auth)
        let line = try sim.waitForLine(prefix: "listening on ")
        return (sim, String(line.dropFirst("listening on ".count)))
    }

    /// A clean slate for a test that runs several campaigns: no state, reports or request log.
    func forgetEarlierRuns() {
        for d in ["state", "reports", "sim"] { try? FileManager.default.removeItem(atPath: dir.file(d)) }
    }

    func writeJob(_ apnsLines: String) throws -> String {
        var rows = ["token"]
        for i in 1...Self.recipients { rows.append(String(format: "%064x", i)) }
        try dir.write("data/a.csv", rows.joined(separator: "\n") + "\n")
        return try dir.write("jobs/job.yaml", """
            campaign: connect-test
            audience: { files: [../data/a.csv] }
            apns:
              endpoint: production
              topic: com.example.app
              streams_per_connection: 10
            \(apnsLines)
            push:
              template: { aps: { alert: "hello" } }
            retry: { max_attempts: 2 }
            """)
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

    func run(_ job: String, url: String, env: [String: String]) throws -> ProcessRunner.Result {
        try ProcessRunner.run(ProcessRunner.heraldBinary, ["run", job, "--endpoint", url, "--ca-file", dir.file("sim/ca.pem")],
                              environment: ProcessInfo.processInfo.environment.merging(env) { _, new in new })
    }

    @Test func aP12CertificateSendsEveryPushWithoutAuthorization() throws {
        let ca = try SimulatorCertificateAuthority(commonName: "e2e client CA")
        let (sim, url) = try startSimulator(["--client-ca", try dir.write("client-ca.pem", ca.certificatePEM)])
        defer { _ = sim.stop() }
        let files = try ClientCertificateFiles(issuedBy: ca, name: "app", in: dir)
        let job = try writeJob("  certificate: { p12_file: \(files.p12), password_env: HERALD_TEST_P12_PASSWORD }")
        let r = try run(job, url: url, env: ["HERALD_TEST_P12_PASSWORD": files.password])
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
        let (sim, url) = try startSimulator(["--client-ca", try dir.write("client-ca.pem", ca.certificatePEM)])
        defer { _ = sim.stop() }
        let stranger = try ClientCertificateFiles(issuedBy: try SimulatorCertificateAuthority(commonName: "other CA"), name: "intruder", in: dir)
        let job = try writeJob("  certificate: { cert_file: \(stranger.certificate), key_file: \(stranger.key) }")
        let r = try run(job, url: url, env: [:])
        #expect(r.status == 3, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("APNs refused the client certificate \(stranger.certificate) (apns.certificate)"), "\(r.stderr)")
        #expect(requestLog().isEmpty)
        let c = try counts()
        #expect(c["pending"] == Self.recipients && c["sent"] == 0 && c["failed"] == 0, "\(c)")
    }

    @Test func aWrongPasswordIsExitTwoNamingTheFieldNotThePassword() throws {
        let ca = try SimulatorCertificateAuthority(commonName: "e2e client CA")
        let files = try ClientCertificateFiles(issuedBy: ca, name: "app", in: dir)
        let job = try writeJob("  certificate: { p12_file: \(files.p12), password_env: HERALD_TEST_P12_PASSWORD }")
        let wrong = "wr0ng-passw0rd-xyz"
        let r = try ProcessRunner.run(ProcessRunner.heraldBinary, ["run", job],
                                      environment: ProcessInfo.processInfo.environment.merging(["HERALD_TEST_P12_PASSWORD": wrong]) { _, new in new })
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("apns.certificate.password_env: the password in $HERALD_TEST_P12_PASSWORD does not open \(files.p12)"), "\(r.stderr)")
        #expect(!(r.stdout + r.stderr).contains(wrong))
        #expect(!FileManager.default.fileExists(atPath: dir.file("reports/connect-test/deliveries.csv")), "stopped before the state file was opened")
    }

    @Test
    func pushesGoThroughTheProxyTunnelAndProxyCredentialsStaySecret() throws {
        forgetEarlierRuns()
        let key = TestKey()
        let (sim, url) = try startSimulator(["--team-id", TestKey.teamId, "--key-id", TestKey.keyId,
                                             "--auth-public-key", try dir.write("sim/pub.pem", key.publicKeyPEM)])
        defer { _ = sim.stop() }
        let proxy = try ConnectProxy(credentials: ("herald", "pr0xy-s3cret"))
        defer { proxy.stop() }
        let job = try writeJob("""
              auth: { team_id: \(TestKey.teamId), key_id: \(TestKey.keyId), key_file: \(try key.writeP8(in: dir)) }
              proxy: { url: \(proxy.url), user_env: HERALD_TEST_PROXY_USER, password_env: HERALD_TEST_PROXY_PASSWORD }
            """)
        // Wrong credentials: the tunnel is refused before any push, exit 2, the password nowhere.
        let refused = try run(job, url: url, env: ["HERALD_TEST_PROXY_USER": "herald", "HERALD_TEST_PROXY_PASSWORD": "not-it-42"])
        #expect(refused.status == 2, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("apns.proxy \(proxy.url) refused the tunnel to APNs: "), "\(refused.stderr)")
        #expect(refused.stderr.contains("(HTTP 407): it wants credentials"), "\(refused.stderr)")
        #expect(!(refused.stdout + refused.stderr).contains("not-it-42"))
        #expect(proxy.tunnels == 0 && requestLog().isEmpty)

        let r = try run(job, url: url, env: ["HERALD_TEST_PROXY_USER": "herald", "HERALD_TEST_PROXY_PASSWORD": "pr0xy-s3cret"])
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
        let (sim, url) = try startSimulator(["--team-id", TestKey.teamId, "--key-id", TestKey.keyId,
                                             "--auth-public-key", try dir.write("sim/pub.pem", key.publicKeyPEM)])
        defer { _ = sim.stop() }
        let proxy = try ConnectProxy()
        defer { proxy.stop() }
        let job = try writeJob("""
              auth: { team_id: \(TestKey.teamId), key_id: \(TestKey.keyId), key_file: \(try key.writeP8(in: dir)) }
            """)
        let unset = ["https_proxy": "", "HTTPS_PROXY": "", "all_proxy": "", "ALL_PROXY": "", "no_proxy": "", "NO_PROXY": ""]
        let viaProxy = try run(job, url: url, env: unset.merging(["https_proxy": proxy.url]) { _, new in new })
        #expect(viaProxy.status == 0, "\(viaProxy.stdout)\(viaProxy.stderr)")
        #expect(try counts()["sent"] == Self.recipients)
        #expect(proxy.tunnels == 1, "the campaign's connection (no probe without apns.proxy): \(proxy.tunnels)")

        try? FileManager.default.removeItem(atPath: dir.file("state"))
        try? FileManager.default.removeItem(atPath: dir.file("reports"))
        let direct = try run(job, url: url, env: unset)
        #expect(direct.status == 0, "\(direct.stdout)\(direct.stderr)")
        #expect(try counts()["sent"] == Self.recipients)
        #expect(proxy.tunnels == 1, "no tunnel without a proxy in the environment")

        try? FileManager.default.removeItem(atPath: dir.file("state"))
        try? FileManager.default.removeItem(atPath: dir.file("reports"))
        let exempt = try run(job, url: url, env: unset.merging(["https_proxy": proxy.url, "no_proxy": "localhost,127.0.0.1"]) { _, new in new })
        #expect(exempt.status == 0, "\(exempt.stdout)\(exempt.stderr)")
        #expect(try counts()["sent"] == Self.recipients)
        #expect(proxy.tunnels == 1, "no_proxy lists the host: no tunnel")
        #expect(requestLog().count == 3 * Self.recipients)
    }
}
