import Foundation
import HeraldTestSupport
import Testing

/// Kills `herald run` with SIGKILL mid-send, reruns the same command, and checks from the
/// simulator's request log that nobody was skipped and nobody got a second, different notification.
@Suite(.serialized) struct CrashResumeTests {
    let dir = TemporaryDirectory("e2e-kill")

    @Test func sigkillMidSendThenRerunSendsEveryoneOnce() throws {
        let count = 4_000
        var rows = ["token"]
        for i in 1...count { rows.append(String(format: "%064x", i)) }
        try dir.writeGzip("data/a.csv.gz", rows.joined(separator: "\n") + "\n")
        // A rate limit stretches the send over seconds, so the kill lands mid-send.
        let job = try dir.write("jobs/job.yaml", """
            campaign: kill-test
            audience: { files: [../data/a.csv.gz] }
            apns:
              endpoint: simulator
              topic: com.example.app
              streams_per_connection: 50
              simulator: { log: ../out/requests.ndjson }
            push:
              template: { aps: { alert: "hello" } }
            throttle: { rate: 1000 }
            """)
        let log = dir.file("out/requests.ndjson")
        let first = try BackgroundProcess(ProcessRunner.heraldBinary, ["run", job])
        // Wait until some, not all, requests went out.
        var sentBefore = 0
        for _ in 0..<400 {
            sentBefore = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").count
            if sentBefore >= 500 { break }
            usleep(10_000)
        }
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        #expect(first.process.terminationReason == .uncaughtSignal)
        #expect(sentBefore >= 500 && sentBefore < count, "killed mid-send (\(sentBefore) sent)")

        // The lock died with the process: the rerun is not refused.
        let second = try ProcessRunner.run(ProcessRunner.heraldBinary, ["run", job])
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")

        // Every token got a 200; any token sent twice was in flight at the kill, and carried the same apns-id both times.
        var ids: [String: [String]] = [:]
        for line in try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n") {
            let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            #expect(o["status"] as? Int == 200)
            ids[o["token"] as! String, default: []].append(o["apns_id"] as! String)
        }
        #expect(ids.count == count, "nobody skipped")
        let resent = ids.filter { $0.value.count > 1 }
        #expect(resent.count <= 50, "at most the in-flight window (1 connection × 50 streams) is resent: \(resent.count)")
        #expect(resent.allSatisfy { Set($0.value).count == 1 }, "a resend reuses its apns-id")
        let deliveries = try String(contentsOfFile: dir.file("reports/kill-test/deliveries.csv"), encoding: .utf8)
        #expect(deliveries.split(separator: "\n").dropFirst().filter { $0.contains(",sent,200,") }.count == count)
    }
}
