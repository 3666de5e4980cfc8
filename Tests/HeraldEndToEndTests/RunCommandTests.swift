import Foundation
import HeraldTestSupport
import Testing

/// Runs the built `herald` binary on job files, as cron would, and checks exit codes and reports.
@Suite(.serialized) struct RunCommandTests {
    let dir = TemporaryDirectory("e2e")

    static func token(_ i: Int, prefix: String = "") -> String { prefix + String(format: "%0\(64 - prefix.count)x", i) }

    /// A messy audience with known answers: 20 good rows, 2 duplicates in other spellings,
    /// 1 invalid token, 1 missing token, 1 wrong field count, 2 Unregistered, 1 BadDeviceToken.
    func writeAudience(gzip: Bool = true) throws -> String {
        var rows = ["id,token,first_name,locale"]
        for i in 1...20 { rows.append("u\(i),\(Self.token(i)),Ada\(i),\(i % 2 == 0 ? "fr-CA" : "en")") }
        rows.append("dup1,\(Self.token(3).uppercased()),Dup,en")                         // line 22
        rows.append("dup2,<\(Self.token(4).prefix(32)) \(Self.token(4).dropFirst(32))>,Dup,en") // line 23
        rows.append("bad,xyz-not-hex,Bad,en")                                             // line 24
        rows.append("none,,Nobody,en")                                                    // line 25
        rows.append("short,\(Self.token(99))")                                            // line 26
        rows.append("d1,\(Self.token(1, prefix: "dead")),Gone,en")                        // line 27
        rows.append("d2,\(Self.token(2, prefix: "dead")),Gone,en")                        // line 28
        rows.append("b1,\(Self.token(1, prefix: "badd")),Wrong,en")                       // line 29
        let text = rows.joined(separator: "\n") + "\n"
        return gzip ? try dir.writeGzip("data/audience.csv.gz", text) : try dir.write("data/audience.csv", text)
    }

    let herald = Herald()

    /// The messy audience (`audience`) with a French template, against a simulator that answers
    /// tokens starting `dead` 410 and `badd` 400.
    func writeJob(audience: String = "../data/audience.csv.gz", _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TestJob("job") {
            $0.campaign = "e2e-test"
            $0.audience.files = [audience]
            $0.audience.tokenField = "token"
            $0.audience.localeField = "locale"
            $0.audience.idField = "id"
            $0.audience.maxInvalidRows = "100%"   // a deliberately messy fixture
            $0.apns.streamsPerConnection = 10
            $0.apns.simulator.unregisteredPrefixes = ["dead"]
            $0.apns.simulator.badTokenPrefixes = ["badd"]
            $0.apns.simulator.log = "../out/requests.ndjson"
            $0.push.template = #"{ aps: { alert: { title: "Hi {{first_name}}", body: "Spring sale" }, badge: 1 } }"#
            $0.push.locales = #"{ fr: { aps: { alert: { title: "Salut {{first_name}}", body: "Soldes" }, badge: 1 } } }"#
            configure(&$0)
        }.write(in: dir)
    }

    @Test func demoShapedCampaignEndToEnd() throws {
        _ = try writeAudience()
        let job = try writeJob()
        let r = try herald.run(job)
        #expect(r.status == 0, "stdout: \(r.stdout)\nstderr: \(r.stderr)")
        #expect(r.stdout.contains("reports   \(dir.file("reports/e2e-test"))/"))

        let reports = dir.file("reports/e2e-test")
        let deliveries = try CSV.rows(reports + "/deliveries.csv")
        #expect(deliveries.count == 23, "20 good + 2 Unregistered + 1 BadDeviceToken distinct tokens")
        let byToken = Dictionary(uniqueKeysWithValues: deliveries.map { ($0["token"]!, $0) })
        #expect(byToken[Self.token(3)]?["line"] == "4", "the first row where a token appears")
        #expect(byToken[Self.token(3)]?["recipient_id"] == "u3")
        #expect(deliveries.filter { $0["status"] == "sent" }.count == 20)
        #expect(byToken[Self.token(1, prefix: "dead")]?["status"] == "failed")
        #expect(byToken[Self.token(1, prefix: "dead")]?["http_status"] == "410")
        #expect(byToken[Self.token(1, prefix: "dead")]?["reason"] == "Unregistered")
        #expect(byToken[Self.token(1, prefix: "badd")]?["reason"] == "BadDeviceToken")
        #expect(deliveries.allSatisfy { $0["attempts"] == "1" && $0["file"] == "../data/audience.csv.gz" })

        let invalid = try CSV.rows(reports + "/invalid.csv")
        #expect(invalid.map { $0["line"]! } == ["24", "25", "26"])
        #expect(invalid.map { $0["reason"]! } == ["invalid_token", "missing_token", "wrong_field_count"])

        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: reports + "/summary.json"))) as! [String: Any]
        let counts = summary["counts"] as! [String: Int]
        #expect(counts["rows"] == 28)
        #expect(counts["invalid"] == 3)
        #expect(counts["duplicates"] == 2)
        #expect(counts["valid"] == 25)
        #expect(counts["sent"] == 20)
        #expect(counts["failed"] == 3)
        #expect(counts["pending"] == 0)
        #expect(summary["campaign"] as? String == "e2e-test")
        #expect((summary["by_reason"] as! [String: Int]) == ["Unregistered": 2, "BadDeviceToken": 1])
        #expect((summary["reason_actions"] as! [String: String]) == ["Unregistered": "permanent", "BadDeviceToken": "permanent"])

        // The simulator saw each distinct token exactly once, with the apns-id the report shows.
        let log = try String(contentsOfFile: dir.file("out/requests.ndjson"), encoding: .utf8).split(separator: "\n")
        #expect(log.count == 23)
        var seen: [String: String] = [:]
        for line in log {
            let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            let token = o["token"] as! String
            #expect(seen[token] == nil, "sent twice: \(token)")
            seen[token] = (o["apns_id"] as? String)
            let body = String(decoding: Data(base64Encoded: (o["body"] as? String) ?? "") ?? Data((o["body"] as? String ?? "").utf8), as: UTF8.self)
            if token == Self.token(2) { #expect(body.contains("Salut Ada2"), "\(body)") }
        }
        for d in deliveries { #expect(seen[d["token"]!] == d["apns_id"]) }

        // Reports and state are readable by their owner only.
        for p in [reports + "/deliveries.csv", reports + "/summary.json", dir.file("state/e2e-test.sqlite")] {
            #expect((try FileManager.default.attributesOfItem(atPath: p)[.posixPermissions] as? Int) == 0o600, "\(p)")
        }

        // Running the finished campaign again sends nothing and exits 0.
        let again = try herald.run(job)
        #expect(again.status == 0)
        #expect(again.stdout.contains("already finished"))
        let logAgain = try String(contentsOfFile: dir.file("out/requests.ndjson"), encoding: .utf8).split(separator: "\n")
        #expect(logAgain.count == 23)
    }

    @Test func plainAndNDJSONAudiencesWork() throws {
        var lines: [String] = []
        for i in 1...5 { lines.append(#"{"token":"\#(Self.token(i))","user":{"first_name":"Né\#(i)"},"locale":"en"}"#) }
        try dir.write("data/a.ndjson", lines.joined(separator: "\n"))
        let job = try TestJob("job") {
            $0.campaign = "e2e-ndjson"
            $0.audience.files = ["../data/a.ndjson"]
            $0.audience.format = "ndjson"
            $0.push.template = #"{ aps: { alert: "Hi {{user.first_name}}" } }"#
        }.write(in: dir)
        let r = try herald.run(job)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let deliveries = try CSV.rows(dir.file("reports/e2e-ndjson/deliveries.csv"))
        #expect(deliveries.count == 5 && deliveries.allSatisfy { $0["status"] == "sent" })
    }

    @Test func badInputExitsTwoAndSendsNothing() throws {
        _ = try writeAudience()
        // Missing job file.
        var r = try herald(["run", dir.file("jobs/missing.yaml")])
        #expect(r.status == 2)
        #expect(r.stderr.contains("missing.yaml: job file not found"))
        // Unknown key.
        r = try herald.run(try writeJob { $0.extra = "colour: blue" })
        #expect(r.status == 2)
        #expect(r.stderr.contains("unknown key \"colour\""), "\(r.stderr)")
        // Missing audience file.
        r = try herald.run(try writeJob(audience: "../data/nope.csv.gz"))
        #expect(r.status == 2)
        #expect(r.stderr.contains("audience file not found: ../data/nope.csv.gz"), "\(r.stderr)")
        // Missing key file.
        r = try herald.run(try writeJob { $0.apns.keyFile = "../keys/AuthKey_KEY1234567.p8" })
        #expect(r.status == 2)
        #expect(r.stderr.contains("key file that does not exist: ../keys/AuthKey_KEY1234567.p8"), "\(r.stderr)")
        // A truncated gzip audience: exit 2 before anything is sent.
        let good = try Data(contentsOf: URL(fileURLWithPath: dir.file("data/audience.csv.gz")))
        try good.prefix(good.count / 2).write(to: URL(fileURLWithPath: dir.file("data/cut.csv.gz")))
        r = try herald.run(try writeJob(audience: "../data/cut.csv.gz"))
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("cut.csv.gz"), "\(r.stderr)")
        // Nothing was ever sent.
        let requestLog = (try? String(contentsOfFile: dir.file("out/requests.ndjson"), encoding: .utf8)) ?? ""
        #expect(requestLog.isEmpty)
    }

    @Test func ownKeyFileWorksAgainstTheSimulator() throws {
        _ = try writeAudience(gzip: false)
        let key = TestKey()
        let keyPath = try key.writeP8(in: dir)
        let job = try writeJob(audience: "../data/audience.csv") { $0.apns.keyFile = keyPath }
        let r = try herald.run(job)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let log = try String(contentsOfFile: dir.file("out/requests.ndjson"), encoding: .utf8)
        #expect(log.contains("\"jwt_kid\":\"\(TestKey.keyId)\""))
        // The key never reaches the outputs.
        let body = key.privateKeyPEM.split(separator: "\n")[1]
        #expect(!r.stdout.contains(body) && !r.stderr.contains(body) && !log.contains(body))
    }
}
