import Foundation
import HeraldTestSupport
import Testing

/// `herald sim` as its own process, and `herald run` against it through `--endpoint` and `--ca-file`.
@Suite(.serialized) struct AbortAndSimCommandTests {
    let dir = TemporaryDirectory("e2e-sim")

    func startSimulator(verifying key: TestKey) throws -> (BackgroundProcess, String) {
        let pub = try dir.write("sim/pub.pem", key.publicKeyPEM)
        let sim = try BackgroundProcess(ProcessRunner.heraldBinary, [
            "sim", "--port", "0", "--team-id", TestKey.teamId, "--key-id", TestKey.keyId, "--auth-public-key", pub,
            "--bundle-id", "com.example.app", "--ca-out", dir.file("sim/ca.pem"), "--log", dir.file("sim/requests.ndjson"),
        ])
        let line = try sim.waitForLine(prefix: "listening on ")
        return (sim, String(line.dropFirst("listening on ".count)))
    }

    func writeJob(keyPath: String) throws -> String {
        var rows = ["token"]
        for i in 1...30 { rows.append(String(format: "%064x", i)) }
        try dir.write("data/a.csv", rows.joined(separator: "\n") + "\n")
        return try dir.write("jobs/job.yaml", """
            campaign: abort-test
            audience: { files: [../data/a.csv] }
            apns:
              endpoint: production
              topic: com.example.app
              auth: { team_id: \(TestKey.teamId), key_id: \(TestKey.keyId), key_file: \(keyPath) }
              streams_per_connection: 5
            push:
              template: { aps: { alert: "hello" } }
            retry: { max_attempts: 2 }
            """)
    }

    @Test func aRejectedProviderTokenAbortsWithExitThreeAndPutsRecipientsBack() throws {
        let simKey = TestKey()
        let (sim, url) = try startSimulator(verifying: simKey)
        defer { _ = sim.stop() }
        // The job signs with a different key than the simulator trusts: 403 InvalidProviderToken.
        let job = try writeJob(keyPath: try TestKey().writeP8(in: dir))
        let r = try ProcessRunner.run(ProcessRunner.heraldBinary, ["run", job, "--endpoint", url, "--ca-file", dir.file("sim/ca.pem")])
        #expect(r.status == 3, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("InvalidProviderToken"), "\(r.stderr)")
        let log = try String(contentsOfFile: dir.file("sim/requests.ndjson"), encoding: .utf8).split(separator: "\n")
        #expect(log.count <= 5, "stopped after the first window, not the whole audience")
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("reports/abort-test/summary.json")))) as! [String: Any]
        let counts = summary["counts"] as! [String: Int]
        #expect(counts["pending"] == 30 && counts["failed"] == 0 && counts["sent"] == 0)

        // Fixed configuration (the right key), same command: the campaign resumes and finishes.
        let good = try dir.write("AuthKey_\(TestKey.keyId).p8", simKey.privateKeyPEM)
        chmod(good, 0o600)
        let job2 = try writeJob(keyPath: good)
        let r2 = try ProcessRunner.run(ProcessRunner.heraldBinary, ["run", job2, "--endpoint", url, "--ca-file", dir.file("sim/ca.pem")])
        #expect(r2.status == 0, "\(r2.stdout)\(r2.stderr)")
        let deliveries = try String(contentsOfFile: dir.file("reports/abort-test/deliveries.csv"), encoding: .utf8)
        #expect(deliveries.split(separator: "\n").dropFirst().allSatisfy { $0.contains(",sent,200,") })
        #expect(sim.stop() == 0, "the simulator stops cleanly on SIGTERM")
    }

    @Test func withoutTheCAFileVerificationFails() throws {
        let key = TestKey()
        let (sim, url) = try startSimulator(verifying: key)
        defer { _ = sim.stop() }
        let job = try writeJob(keyPath: try key.writeP8(in: dir))
        let r = try ProcessRunner.run(ProcessRunner.heraldBinary, ["run", job, "--endpoint", url])
        #expect(r.status == 4, "\(r.stdout)\(r.stderr)")
        let log = (try? String(contentsOfFile: dir.file("sim/requests.ndjson"), encoding: .utf8)) ?? ""
        #expect(log.isEmpty, "nothing reaches a server whose certificate is not trusted")
    }
}
