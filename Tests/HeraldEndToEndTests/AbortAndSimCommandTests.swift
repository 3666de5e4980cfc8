import Foundation
import HeraldTestSupport
import Testing

/// `herald sim` as its own process, and `herald run` against it through `--endpoint` and `--ca-file`.
@Suite(.serialized) struct AbortAndSimCommandTests {
    let dir = TemporaryDirectory("e2e-sim")

    let herald = Herald()

    /// 30 recipients sent to `herald sim` with the key in `keyPath`.
    func writeJob(keyPath: String) throws -> JobFile {
        try TestJob("job", tokens: (1...30).map { String(format: "%064x", $0) }) {
            $0.campaign = "abort-test"
            $0.apns.endpoint = "production"
            $0.apns.keyFile = keyPath
            $0.apns.streamsPerConnection = 5
            $0.retry.maxAttempts = 2
        }.write(in: dir)
    }

    @Test func aRejectedProviderTokenAbortsWithExitThreeAndPutsRecipientsBack() throws {
        let simKey = TestKey()
        let sim = try SimulatorProcess(in: dir, trusting: simKey)
        defer { sim.stop() }
        // The job signs with a different key than the simulator trusts: 403 InvalidProviderToken.
        let job = try writeJob(keyPath: try TestKey().writeP8(in: dir))
        let r = try herald.run(job, sim.endpointArguments)
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
        let r2 = try herald.run(job2, sim.endpointArguments)
        #expect(r2.status == 0, "\(r2.stdout)\(r2.stderr)")
        let deliveries = try String(contentsOfFile: dir.file("reports/abort-test/deliveries.csv"), encoding: .utf8)
        #expect(deliveries.split(separator: "\n").dropFirst().allSatisfy { $0.contains(",sent,200,") })
        #expect(sim.stop() == 0, "the simulator stops cleanly on SIGTERM")
    }

    @Test func withoutTheCAFileVerificationFails() throws {
        let key = TestKey()
        let sim = try SimulatorProcess(in: dir, trusting: key)
        defer { sim.stop() }
        let job = try writeJob(keyPath: try key.writeP8(in: dir))
        let r = try herald.run(job, ["--endpoint", sim.url])
        #expect(r.status == 4, "\(r.stdout)\(r.stderr)")
        let log = (try? String(contentsOfFile: dir.file("sim/requests.ndjson"), encoding: .utf8)) ?? ""
        #expect(log.isEmpty, "nothing reaches a server whose certificate is not trusted")
    }
}
