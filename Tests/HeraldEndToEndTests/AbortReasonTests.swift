import Foundation
import HeraldTestSupport
import Testing

/// Every APNs answer that means "our configuration is wrong" (Apple's table: key, certificate,
/// environment, topic) aborts the campaign at once with exit 3, and the recipients that got it go
/// back to pending: it was not their token, so the rerun after the fix sends to them. The
/// in-process simulator answers the reason for every token (`apns.simulator.answers`); the rerun
/// drops the rule, as fixing the configuration would.
@Suite struct AbortReasonTests {
    let dir = TemporaryDirectory("e2e-abort")

    static let reasons = ["InvalidProviderToken", "MissingProviderToken", "BadCertificate", "BadCertificateEnvironment",
                          "BadEnvironmentKeyIdInToken", "BadTopic", "TopicDisallowed", "MissingTopic"]

    let herald = Herald()

    /// Every token answered `reason`, or nothing but 200s.
    func writeJob(_ name: String, answer reason: String?) throws -> JobFile {
        try TestJob(name) {
            $0.audience.files = ["../data/tokens.csv"]
            $0.apns.connections = 2
            $0.apns.streamsPerConnection = 10
            $0.apns.simulator.answers = reason.map { [("a", $0)] } ?? []
        }.write(in: dir)
    }

    @Test(arguments: reasons)
    func abortsWithExit3AndPutsTheRecipientsBackToPending(reason: String) throws {
        let tokens = (1...200).map { "a" + String(format: "%063x", $0) }
        try dir.write("data/tokens.csv", (["token"] + tokens).joined(separator: "\n") + "\n")
        let name = "abort-\(reason.lowercased())"
        let job = try writeJob(name, answer: reason)
        let first = try herald.run(job)
        #expect(first.status == 3, "\(first.stdout)\(first.stderr)")
        #expect(first.stderr.contains(reason), "the operator is told which answer: \(first.stderr)")
        let asked = try String(contentsOfFile: dir.file("out/\(name).ndjson"), encoding: .utf8).split(separator: "\n")
            .filter { $0.contains("\"token\"") }.count
        #expect(asked > 0 && asked <= 2 * 10, "stopped at the first answers: \(asked) of 200 requests")
        let summary = try JSON.object(dir.file("reports/\(name)/summary.json"))
        let counts = try #require(summary["counts"] as? [String: Any])
        #expect(counts["pending"] as? Int == 200 && counts["failed"] as? Int == 0 && counts["sent"] as? Int == 0)

        // The configuration is fixed: the rerun sends to everyone, once each.
        _ = try writeJob(name, answer: nil)
        let rerun = try herald.run(job)
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        let after = try #require(try JSON.object(dir.file("reports/\(name)/summary.json"))["counts"] as? [String: Any])
        #expect(after["sent"] as? Int == 200 && after["pending"] as? Int == 0)
    }
}
