import Foundation
import HeraldTestSupport
import Testing

/// `herald validate` on the built binary: counts, `--json`, exit codes 0 / 5 / 2, globs.
@Suite struct ValidateCommandTests {
    let dir = TemporaryDirectory("e2e-validate")

    static func token(_ i: Int) -> String { String(format: "%064x", i) }

    /// Two gzip parts matched by a glob, and one NDJSON file: 16 rows, 4 invalid (one of them a
    /// render error), 2 duplicates (one across files).
    func writeAudience() throws {
        var part1 = ["id,token,first_name,unread"]
        for i in 1...6 { part1.append("u\(i),\(Self.token(i)),Ada\(i),\(i)") }          // lines 2-7
        part1.append("dup,<\(Self.token(3).uppercased())>,Dup,1")                        // 8 duplicate
        part1.append("bad,xyz-not-hex,Bad,1")                                            // 9 invalid_token
        try dir.writeGzip("data/part-1.csv.gz", part1.joined(separator: "\r\n") + "\r\n")
        var part2 = ["id,token,first_name,unread"]
        for i in 7...9 { part2.append("u\(i),\(Self.token(i)),Bo\(i),\(i)") }            // lines 2-4
        part2.append("none,,Nobody,1")                                                   // 5 missing_token
        part2.append("typed,\(Self.token(10)),Cy,many")                                  // 6 bad_field_value
        try dir.writeGzip("data/part-2.csv.gz", part2.joined(separator: "\n") + "\n")
        try dir.write("data/extra.ndjson", """
            {"id":"n1","token":"\(Self.token(1))","first_name":"Again","unread":1}
            {"id":"n2","token":"\(Self.token(11))","first_name":"Di","unread":2}
            {"id":"n3","token":
            """)
    }

    /// The glob of gzip parts and the NDJSON file unless `files` names others; `configure` sets the rest.
    func writeJob(files: [String] = ["../data/part-*.csv.gz", "../data/extra.ndjson"], _ configure: (inout TestJob) -> Void = { _ in }) throws -> String {
        try TestJob("job") {
            $0.campaign = "validate-test"
            $0.audience.files = files
            $0.audience.idField = "id"
            $0.push.template = #"{ aps: { alert: { title: "Hi {{first_name}}", body: "x" }, badge: "{{unread:int}}" } }"#
            configure(&$0)
        }.write(in: dir).path
    }

    func validate(_ args: [String]) throws -> RunResult { try Herald()(["validate"] + args) }

    func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func jsonCountsWithinTheLimitExitZero() throws {
        try writeAudience()
        let r = try validate([try writeJob { $0.audience.maxInvalidRows = "4" }, "--json"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.split(separator: "\n").count == 1, "one JSON object on one line")
        let o = try object(r.stdout)
        #expect(o["rows"] as? Int == 16)
        #expect(o["valid"] as? Int == 12)
        #expect(o["distinct"] as? Int == 10)
        #expect(o["duplicates"] as? Int == 2)
        #expect(o["invalid"] as? Int == 4)
        #expect(o["invalid_by_reason"] as? [String: Int] == ["invalid_token": 1, "missing_token": 1, "bad_field_value": 1, "malformed_json": 1])
        #expect(o["max_invalid_rows"] as? String == "4")
        #expect(o["over_limit"] as? Bool == false)
        let files = try #require(o["files"] as? [[String: Any]])
        #expect(files.map { $0["file"] as? String } == ["../data/part-1.csv.gz", "../data/part-2.csv.gz", "../data/extra.ndjson"])
        #expect(files.map { $0["rows"] as? Int } == [8, 5, 3])
        #expect(files.map { $0["compression"] as? String } == ["gzip", "gzip", "none"])
        #expect(files.map { $0["format"] as? String } == ["csv", "csv", "ndjson"])
        let sizes = try ["part-1.csv.gz", "part-2.csv.gz", "extra.ndjson"].map {
            try FileManager.default.attributesOfItem(atPath: dir.file("data/" + $0))[.size] as? Int
        }
        #expect(files.map { $0["bytes"] as? Int } == sizes)
        let first = try #require(o["first_invalid"] as? [[String: Any]])
        #expect(first.map { "\($0["file"]!):\($0["line"]!):\($0["reason"]!)" } ==
                ["../data/part-1.csv.gz:9:invalid_token", "../data/part-2.csv.gz:5:missing_token",
                 "../data/part-2.csv.gz:6:bad_field_value", "../data/extra.ndjson:3:malformed_json"])
        // Nothing was written: no state file, no reports.
        #expect(!FileManager.default.fileExists(atPath: dir.file("state")))
        #expect(!FileManager.default.fileExists(atPath: dir.file("reports")))
    }

    @Test func overTheDefaultLimitExitsFive() throws {
        try writeAudience()
        let r = try validate([try writeJob()])
        #expect(r.status == 5, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("audience  16 rows: 12 valid (10 distinct tokens, 2 duplicate rows), 4 invalid"), "\(r.stdout)")
        #expect(r.stdout.contains("invalid   bad_field_value 1, invalid_token 1, malformed_json 1, missing_token 1"), "\(r.stdout)")
        #expect(r.stdout.contains("file      ../data/part-1.csv.gz: 8 rows,"), "\(r.stdout)")
        #expect(r.stdout.contains("  ../data/part-2.csv.gz line 6: bad_field_value (unread): "), "\(r.stdout)")
        #expect(r.stderr.contains("herald: error: too many invalid rows: 4 of 16 rows (audience.max_invalid_rows: 5% allows 0)"), "\(r.stderr)")
        let json = try validate([try writeJob(), "--json"])
        #expect(json.status == 5)
        #expect(try object(json.stdout)["over_limit"] as? Bool == true)
    }

    @Test func badJobOrAudienceExitsTwo() throws {
        try writeAudience()
        var r = try validate([dir.file("jobs/missing.yaml")])
        #expect(r.status == 2)
        #expect(r.stderr.contains("missing.yaml: job file not found"))

        r = try validate([try writeJob(files: ["../data/nothing-*.csv.gz"])])
        #expect(r.status == 2)
        #expect(r.stderr.contains("audience.files pattern ../data/nothing-*.csv.gz matches no file"), "\(r.stderr)")

        let full = try Data(contentsOf: URL(fileURLWithPath: dir.file("data/part-1.csv.gz")))
        try full.prefix(full.count - 3).write(to: URL(fileURLWithPath: dir.file("data/cut.csv.gz")))
        r = try validate([try writeJob(files: ["../data/part-2.csv.gz", "../data/cut.csv.gz"]), "--json"])
        #expect(r.status == 2)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains("../data/cut.csv.gz: gzip stream truncated at byte \(full.count - 3)"), "\(r.stderr)")

        r = try validate([try writeJob { $0.audience.registeredAtField = "registered" }])
        #expect(r.status == 2)
        #expect(r.stderr.contains("header has no column \"registered\" named by audience.registered_at_field"), "\(r.stderr)")
    }

    @Test func parseOnlyCountsReaderErrorsOnly() throws {
        try writeAudience()
        let r = try validate([try writeJob(), "--parse-only", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try object(r.stdout)
        #expect(o["rows"] as? Int == 16)
        #expect(o["invalid"] as? Int == 3)
        #expect(o["parse_only"] as? Bool == true)
    }
}
