import Foundation
import HeraldTestSupport
import Testing

/// `herald preview` on the built binary: what it prints, that it matches what `herald run`
/// actually sends (the simulator's request log), and exit 2 on bad jobs.
@Suite(.serialized) struct PreviewCommandTests {
    let dir = TemporaryDirectory("preview")

    static func token(_ i: Int) -> String { String(format: "%064x", i) }

    /// Line 1 header; 2–4 good; 5 wrong field count; 6 no first_name; 7 fr-CA; 8 a long order id.
    func writeAudience() throws {
        try dir.write("data/audience.csv", """
            id,token,first_name,locale,unread,order_id
            u1,\(Self.token(1)),Ada,en,3,A1
            u2,\(Self.token(2)),"Zoë ""Z"" Ünal",en,0,A2
            u3,\(Self.token(3)),李雷,de,12,A3
            u4,\(Self.token(4))
            u5,\(Self.token(5)),,en,1,A5
            u6,\(Self.token(6)),Émile,fr-CA,7,A6
            u7,\(Self.token(7)),Ken,en,2,\(String(repeating: "9", count: 70))

            """)
    }

    let herald = Herald()

    /// The messy audience with a template and a French one; `configure` changes the push.
    func writeJob(topic: String = "com.example.app", _ configure: (inout TestJob.Push) -> Void = { _ in }) throws -> JobFile {
        try TestJob("job") {
            $0.campaign = "preview-test"
            $0.audience.files = ["../data/audience.csv"]
            $0.audience.localeField = "locale"
            $0.audience.idField = "id"
            $0.audience.maxInvalidRows = "100%"   // a deliberately messy fixture
            $0.apns.topic = topic
            $0.apns.streamsPerConnection = 10
            $0.apns.simulator.log = "../out/requests.ndjson"
            $0.push.template = """
                aps: { alert: { title: "Hi {{first_name}}", body: "You have {{unread}} new" }, badge: "{{unread:int}}", sound: default }
                order: "{{order_id}}"
                """
            $0.push.locales = #"{ fr: { aps: { alert: { title: "Salut {{first_name}}", body: "{{unread}} nouveaux" }, badge: "{{unread:int}}" }, order: "{{order_id}}" } }"#
            configure(&$0.push)
        }.write(in: dir)
    }

    /// One recipient block of the output: its title line, header lines and pretty payload.
    struct Block {
        var title = ""
        var headers: [String: String] = [:]
        var size: Int?
        var payload = ""
        var lines: [String] = []
    }

    func blocks(_ stdout: String) -> [Block] {
        var out: [Block] = []
        var inPayload = false
        for line in stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("── ") { out.append(Block(title: line)); inPayload = false; continue }
            guard !out.isEmpty else { continue }
            if line.isEmpty { inPayload = false; continue }
            if line.contains(" shown from the first ") { break }   // the footer
            out[out.count - 1].lines.append(line)
            if inPayload { out[out.count - 1].payload += line + "\n"; continue }
            if line.hasPrefix("payload: ") {
                out[out.count - 1].size = Int(line.dropFirst(9).split(separator: " ")[0])
                inPayload = true
            } else if line.hasPrefix("apns-"), let colon = line.firstIndex(of: ":") {
                out[out.count - 1].headers[String(line[..<colon])] = String(line[line.index(colon, offsetBy: 2)...])
            }
        }
        return out
    }

    func object(_ text: String) -> NSDictionary? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary
    }

    @Test func showsHeadersPayloadsAndRowErrors() throws {
        try writeAudience()
        let job = try writeJob()
        let r = try herald(["preview", job.path, "-n", "5"])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stdout.contains("push      alert, priority 10, topic com.example.app, payload limit 4096 bytes, missing_field error, oversize error"))
        let shown = blocks(r.stdout)
        #expect(shown.count == 6, "5 recipients and the invalid row between them:\n\(r.stdout)")
        guard shown.count == 6 else { return }

        let first = shown[0]
        #expect(first.title == "── ../data/audience.csv line 2 · token 00000000…0001 · locale en → push.template · id u1")
        #expect(first.headers["apns-push-type"] == "alert")
        #expect(first.headers["apns-topic"] == "com.example.app")
        #expect(first.headers["apns-priority"] == "10")
        #expect(first.headers["apns-collapse-id"] == "herald:preview-test")
        #expect(first.headers["apns-id"]?.count == 36)
        #expect(first.headers["apns-expiration"] == nil)
        #expect(first.payload == """
            {
              "aps": {
                "alert": {
                  "title": "Hi Ada",
                  "body": "You have 3 new"
                },
                "badge": 3,
                "sound": "default"
              },
              "order": "A1"
            }

            """)
        #expect(first.size == #"{"aps":{"alert":{"title":"Hi Ada","body":"You have 3 new"},"badge":3,"sound":"default"},"order":"A1"}"#.utf8.count)
        // Quotes and non-ASCII exactly as sent.
        #expect(shown[1].payload.contains(#""title": "Hi Zoë \"Z\" Ünal","#))
        #expect(shown[2].payload.contains(#""title": "Hi 李雷","#))
        // Row problems name file, line and reason.
        #expect(shown[3].title == "── ../data/audience.csv line 5: invalid row, not sent: wrong_field_count: expected 6 fields, found 2")
        #expect(shown[4].lines == ["not sent: ../data/audience.csv line 6: missing_field (first_name): field first_name is empty (used in aps.alert.title)"])
        #expect(shown[5].title.hasSuffix("locale fr-CA → push.locales.fr · id u6"))
        #expect(shown[5].payload.contains(#""title": "Salut Émile","#))
        #expect(r.stdout.hasSuffix("5 recipients shown from the first 6 audience rows; nothing was sent\n"))
        #expect(!FileManager.default.fileExists(atPath: dir.file("state")), "preview writes no state")
    }

    @Test func oneRowByLine() throws {
        try writeAudience()
        let job = try writeJob()
        let r = try herald(["preview", job.path, "--row", "4"])
        #expect(r.status == 0, "\(r.stderr)")
        let shown = blocks(r.stdout)
        #expect(shown.count == 1)
        #expect(shown.first?.title.contains("line 4 · token 00000000…0003") == true)
        #expect(shown.first?.payload.contains(#""badge": 12"#) == true)
        let missing = try herald(["preview", job.path, "--row", "99"])
        #expect(missing.status == 2)
        #expect(missing.stderr == "herald: error: no audience record starts at line 99 of ../data/audience.csv\n")
        let badFile = try herald(["preview", job.path, "--row", "2", "--file", "other.csv"])
        #expect(badFile.status == 2)
        #expect(badFile.stderr.contains("--file other.csv is not one of the job's audience files: ../data/audience.csv"))
    }

    /// The preview is what is sent: run the same job against the simulator and compare every
    /// request's headers and body with the preview of the same recipient.
    @Test func matchesWhatRunSends() throws {
        try expectRunSendsWhatPreviewShows(previewable: 5) { $0.priority = "5"; $0.collapseId = "spring" }
    }

    /// Per-recipient header templates are stored with each recipient and sent as previewed.
    @Test func templatedHeadersAreSentAsPreviewed() throws {
        try expectRunSendsWhatPreviewShows(previewable: 4) { $0.collapseId = "order-{{order_id}}"; $0.priority = "{{prio|5}}" }
    }

    func expectRunSendsWhatPreviewShows(previewable: Int, _ push: (inout TestJob.Push) -> Void) throws {
        try writeAudience()
        let job = try writeJob(push)
        let run = try herald.run(job)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        let preview = try herald(["preview", job.path, "-n", "20"])
        #expect(preview.status == 0, "\(preview.stderr)")

        let log = try String(contentsOfFile: dir.file("out/requests.ndjson"), encoding: .utf8).split(separator: "\n")
        var sent: [String: [String: Any]] = [:]
        for line in log {
            let entry = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let headers = try #require(entry["headers"] as? [String: String])
            sent[headers["apns-id"] ?? ""] = entry
        }
        let previewed = blocks(preview.stdout).filter { $0.size != nil }
        #expect(previewed.count == previewable, "the rows that render")
        #expect(sent.count == previewed.count)
        for block in previewed {
            let id = try #require(block.headers["apns-id"])
            let entry = try #require(sent[id], "preview's apns-id \(id) was not sent")
            let headers = try #require(entry["headers"] as? [String: String])
            for name in ["apns-push-type", "apns-topic", "apns-priority", "apns-collapse-id"] {
                #expect(block.headers[name] == headers[name], "\(name) for \(block.title)")
            }
            let body = try #require(entry["body"] as? String)
            #expect(block.size == body.utf8.count)
            #expect(object(block.payload) == object(body))
        }
    }

    @Test func templatedHeadersPerRecipient() throws {
        try writeAudience()
        let job = try writeJob { $0.collapseId = "order-{{order_id}}"; $0.priority = "{{prio|5}}"; $0.expiration = "{{expires|1h}}" }
        let r = try herald(["preview", job.path, "-n", "7"])
        #expect(r.status == 0, "\(r.stderr)")
        let shown = blocks(r.stdout)
        #expect(shown.first?.headers["apns-collapse-id"] == "order-A1")
        #expect(shown.first?.headers["apns-priority"] == "5")
        #expect(shown.first?.headers["apns-expiration"]?.hasSuffix("(3600 s after sending; shown for a send now)") == true)
        #expect(shown.last?.lines == ["not sent: ../data/audience.csv line 8: bad_field_value (order_id): push.collapse_id is 76 bytes for this recipient; Apple allows at most 64 (BadCollapseId)"])
    }

    /// Background pushes preview like any other (throttle tests run them: ThrottleCommandTests).
    @Test func backgroundPushPreviews() throws {
        try writeAudience()
        let job = try writeJob {
            $0.type = "background"
            $0.template = #"{ aps: { content-available: 1 }, sync: "{{order_id}}" }"#
            $0.locales = nil
        }
        let r = try herald(["preview", job.path, "-n", "1"])
        #expect(r.status == 0, "\(r.stderr)")
        let block = try #require(blocks(r.stdout).first)
        #expect(block.headers["apns-push-type"] == "background")
        #expect(block.headers["apns-priority"] == "5")
        #expect(object(block.payload) == object(#"{"aps":{"content-available":1},"sync":"A1"}"#))
    }

    @Test(arguments: [
        ("  type: background\n  template: { aps: { content-available: 1, alert: \"hi\" } }",
         "push.template: a background push must not include aps.alert, aps.badge or aps.sound (found aps.alert)"),
        ("  template: { aps: { content-available: 1 } }",
         "push.template: aps has content-available: 1 and no alert, badge or sound, which is a background (silent) push"),
        ("  template: { aps: { alert: \"hi\", badge: -1 } }",
         "push.template: aps.badge must be a non-negative integer or a {{field:int}} placeholder"),
        ("  template: { aps: { alert: \"hi\" } }\n  colour: red", "unknown key \"push.colour\""),
        ("  type: background\n  priority: 10\n  template: { aps: { content-available: 1 } }",
         "push.priority must be 5 for background pushes, not 10"),
    ])
    func badJobExitsTwo(push: String, message: String) throws {
        try writeAudience()
        let job = try writeJob { $0.template = nil; $0.locales = nil; $0.extra = push }
        let r = try herald(["preview", job.path])
        #expect(r.status == 2, "\(r.stdout)")
        #expect(r.stderr.hasPrefix("herald: error: "), "\(r.stderr)")
        #expect(r.stderr.contains(message), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    @Test func badTopicAndMissingFilesExitTwo() throws {
        try writeAudience()
        let voip = try writeJob(topic: "com.example.app.voip")
        let topic = try herald(["preview", voip.path])
        #expect(topic.status == 2)
        #expect(topic.stderr.contains("line \(try voip.line(of: "  topic:")): apns.topic com.example.app.voip ends in .voip, the suffix of voip pushes"), "\(topic.stderr)")
        let missing = try herald(["preview", dir.file("jobs/nope.yaml")])
        #expect(missing.status == 2)
        #expect(missing.stderr == "herald: error: \(dir.file("jobs/nope.yaml")): job file not found\n")
        let count = try herald(["preview", try writeJob().path, "-n", "0"])
        #expect(count.status == 2)
        #expect(count.stderr == "herald: error: -n must be at least 1\n")
    }
}
