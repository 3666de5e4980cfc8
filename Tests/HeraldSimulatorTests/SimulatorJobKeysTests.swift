import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// The job file's `apns.simulator` keys, which mirror `herald sim`'s flags.
@Suite struct SimulatorJobKeysTests {
    let dir = TemporaryDirectory("sim-job")

    func job(_ simulator: String) throws -> String {
        try dir.write("data/a.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        return try dir.write("jobs/job.yaml", """
            campaign: keys
            audience: { files: [../data/a.csv] }
            apns:
              endpoint: simulator
              topic: com.example.app
              simulator:
            \(simulator.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
            push:
              template: { aps: { alert: "hi" } }
            """)
    }

    @Test func everyKeyIsRead() throws {
        let spec = try JobLoader.load(path: try job("""
            unregistered_prefixes: [dead]
            bad_token_prefixes: [BADD]
            expired_token_prefixes: [e0, e1]
            not_for_topic_prefixes: f0
            flaky:
              - { prefix: f1, count: 3, status: 500 }
              - { prefix: f2 }
            p429: 0.01
            p500: 0.02
            p503: 0.03
            seed: 42
            latency_ms: 5
            latency_jitter_ms: 7
            goaway_after: 100
            close_after: 50
            close_mode: before
            max_concurrent_streams: 10
            jwt_max_age: 10m
            token_update_interval: 30s
            log: ../out/requests.ndjson
            """))
        let r = spec.apns.simulator
        #expect(r.unregisteredPrefixes == ["dead"] && r.badTokenPrefixes == ["badd"])
        #expect(r.expiredTokenPrefixes == ["e0", "e1"] && r.notForTopicPrefixes == ["f0"])
        #expect(r.flaky == [SimulatorRules.Flaky(prefix: "f1", count: 3, status: 500), SimulatorRules.Flaky(prefix: "f2", count: 2, status: 503)])
        #expect(r.p429 == 0.01 && r.p500 == 0.02 && r.p503 == 0.03 && r.seed == 42)
        #expect(r.latencyMs == 5 && r.latencyJitterMs == 7)
        #expect(r.goawayAfter == 100 && r.closeAfter == 50 && r.closeBeforeProcessing)
        #expect(r.maxConcurrentStreams == 10 && r.jwtMaxAge == 600 && r.tokenUpdateInterval == 30)
        #expect(r.logPath == dir.file("out/requests.ndjson"))
    }

    @Test(arguments: [
        ("p503: 1.5", 7, "apns.simulator.p503 must be a probability from 0 to 1"),
        ("p429: 0.5\np503: 0.6", 7, "p429 + p500 + p503 must not exceed 1"),
        ("close_mode: sideways", 7, "apns.simulator.close_mode must be before or after"),
        ("flaky: [{ prefix: f1, status: 404 }]", 7, "apns.simulator.flaky[0].status must be 429, 500 or 503"),
        ("flaky: [{ prefix: zz }]", 7, "apns.simulator.flaky[0].prefix entries must be hex digits"),
        ("flaky: [{ prefix: f1, tries: 2 }]", 7, "unknown key \"apns.simulator.flaky[0].tries\""),
        ("flaky: f1", 7, "apns.simulator.flaky must be a list"),
        ("goaway_after: 0", 7, "apns.simulator.goaway_after must be between 1"),
        ("latency_ms: fast", 7, "apns.simulator.latency_ms must be a whole number"),
        ("fault: 1", 7, "unknown key \"apns.simulator.fault\""),
    ])
    func badValuesNameTheKeyAndLine(_ yaml: String, _ line: Int, _ message: String) throws {
        let error = try #require(throws: JobError.self) { try JobLoader.load(path: try job(yaml)) }
        #expect(error.message.contains(message), "\(error)")
        #expect(error.line == line, "\(error)")
    }
}
