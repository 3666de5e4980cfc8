import Foundation
import HeraldCore
import HeraldJob
import HeraldPipeline
import HeraldTestSupport
import Testing

/// The audience scan (prescan of `herald run`, body of `herald validate`) on real files.
@Suite struct AudienceScanTests {
    let dir = TemporaryDirectory("scan")

    static func token(_ i: Int) -> String { String(format: "%064x", i) }

    /// Two files, gzip CSV and plain NDJSON, with every kind of row problem the scan counts:
    /// reader errors (invalid_token, missing_token, wrong_field_count, bad_utf8, malformed_json)
    /// and render errors (missing_field, bad_field_value, payload_too_large), plus duplicates
    /// within a file and across the two.
    func writeAudience() throws {
        var csv = ["id,token,name,unread"]
        for i in 1...10 { csv.append("u\(i),\(Self.token(i)),Ann,\(i)") }           // lines 2-11
        csv.append("d1,\(Self.token(2).uppercased()),Dup,1")                         // 12 duplicate
        csv.append("x1,nothex,Bad,1")                                                // 13 invalid_token
        csv.append("x2,,Nobody,1")                                                   // 14 missing_token
        csv.append("x3,\(Self.token(11))")                                           // 15 wrong_field_count
        csv.append("x4,\(Self.token(12)),Ann,lots")                                  // 16 bad_field_value
        csv.append("x5,\(Self.token(13)),\(String(repeating: "n", count: 5000)),1")  // 17 payload_too_large
        try dir.writeGzip("data/a.csv.gz", csv.joined(separator: "\n") + "\n")
        var nd = [String]()
        nd.append(#"{"id":"n1","token":"\#(Self.token(1))","name":"Cross","unread":2}"#)  // 1 duplicate of a.csv line 2
        nd.append(#"{"id":"n2","token":"\#(Self.token(20))","unread":2}"#)               // 2 missing_field (name)
        nd.append(#"{"id":"n3","token":"\#(Self.token(21))","name":"ok","unread":3"#)    // 3 malformed_json
        nd.append(#"{"id":"n4","token":"\#(Self.token(22))","name":"ok","unread":4}"#)   // 4 valid
        var bytes = Array((nd.joined(separator: "\n") + "\n").utf8)
        bytes += Array(#"{"token":"\#(Self.token(23))","name":"Ren"#.utf8) + [0xE9] + Array(#"","unread":1}"#.utf8)  // 5 bad_utf8
        try Data(bytes).write(to: URL(fileURLWithPath: dir.file("data/b.ndjson")))
    }

    func spec(files: String = "[../data/a.csv.gz, ../data/b.ndjson]", extra: String = "") throws -> JobSpec {
        let path = try dir.write("jobs/job.yaml", """
            campaign: scan
            audience:
              files: \(files)
              id_field: id
            \(extra)
            apns: { endpoint: simulator, topic: com.example.app }
            push:
              template: { aps: { alert: { title: "Hi {{name}}", body: "You have {{unread}}" }, badge: "{{unread:int}}" } }
            """)
        return try JobLoader.load(path: path)
    }

    /// Header templates are rendered as in the run: a collapse id over 64 bytes for one row makes
    /// that row invalid in the scan too, so `validate` counts what `run` will find.
    @Test func headerTemplateErrorsCountAsInvalid() throws {
        let long = String(repeating: "k", count: 80)
        _ = try dir.write("data/h.csv", "token,key\n\(Self.token(1)),a\n\(Self.token(2)),\(long)\n\(Self.token(3)),b\n")
        let path = try dir.write("jobs/headers.yaml", """
            campaign: scan
            audience: { files: [../data/h.csv], max_invalid_rows: 100% }
            apns: { endpoint: simulator, topic: com.example.app }
            push:
              template: { aps: { alert: "hi" } }
              collapse_id: "c-{{key}}"
            """)
        let result = try AudienceScan(spec: try JobLoader.load(path: path)).run()
        #expect(result.valid == 2 && result.invalid == 1)
        #expect(result.invalidByReason == [.badFieldValue: 1])
    }

    @Test func countsEveryKindOfRowOnce() throws {
        try writeAudience()
        let result = try AudienceScan(spec: try spec()).run()
        #expect(result.rows == 21)
        #expect(result.invalid == 8)
        #expect(result.valid == 13)
        #expect(result.distinct == 11)
        #expect(result.duplicates == 2)
        #expect(result.invalidByReason == [.invalidToken: 1, .missingToken: 1, .wrongFieldCount: 1, .badFieldValue: 1,
                                           .payloadTooLarge: 1, .missingField: 1, .malformedJSON: 1, .badUTF8: 1])
        #expect(result.firstInvalid.map(\.location.line) == [13, 14, 15, 16, 17, 2, 3, 5])
        #expect(result.firstInvalid[3].detail.contains("lots"))
        #expect(result.files.map(\.name) == ["../data/a.csv.gz", "../data/b.ndjson"])
        #expect(result.files.map { [$0.rows, $0.valid, $0.invalid] } == [[16, 11, 5], [5, 2, 3]])
        #expect(result.files.map(\.format) == [.csv, .ndjson])
        #expect(result.files[1].bytes == (try FileManager.default.attributesOfItem(atPath: dir.file("data/b.ndjson"))[.size] as? Int))
        #expect(result.files[0].compression == "gzip" && result.files[1].compression == "none")
        // 8 of 21 is over the default 5 %.
        #expect(result.isOverInvalidLimit)
        #expect(result.allowedInvalid == 1)
        #expect(result.invalidLimitMessage == "too many invalid rows: 8 of 21 rows (audience.max_invalid_rows: 5% allows 1)")
    }

    @Test func withinTheLimitPasses() throws {
        try writeAudience()
        for limit in ["8", "40%"] {
            let result = try AudienceScan(spec: try spec(extra: "  max_invalid_rows: \(limit)")).run()
            #expect(!result.isOverInvalidLimit, "\(limit)")
        }
        #expect(try AudienceScan(spec: try spec(extra: "  max_invalid_rows: 7")).run().isOverInvalidLimit)
    }

    @Test func skipRecipientCountsAsMissingField() throws {
        try writeAudience()
        let path = try dir.write("jobs/skip.yaml", """
            campaign: scan
            audience: { files: [../data/b.ndjson] }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template: { aps: { alert: "Hi {{name}}" } }, missing_field: skip_recipient }
            """)
        let result = try AudienceScan(spec: try JobLoader.load(path: path)).run()
        #expect(result.invalidByReason[.missingField] == 1)
        #expect(result.firstInvalid.first?.detail.contains("skip_recipient") == true)
    }

    @Test func parseOnlyNeitherRendersNorCountsDuplicates() throws {
        try writeAudience()
        let result = try AudienceScan(spec: try spec(), depth: .parseOnly).run()
        #expect(result.rows == 21)
        #expect(result.invalid == 5)   // reader errors only: no missing_field, bad_field_value, payload_too_large
        #expect(result.valid == 16)
        #expect(result.distinct == 0 && result.duplicates == 0)
    }

    @Test func fileErrorsAreExitTwoNamingFileAndOffset() throws {
        try writeAudience()
        let full = try Data(contentsOf: URL(fileURLWithPath: dir.file("data/a.csv.gz")))
        try full.prefix(full.count - 6).write(to: URL(fileURLWithPath: dir.file("data/cut.csv.gz")))
        let failure = try #require(throws: RunFailure.self) { try AudienceScan(spec: try spec(files: "[../data/b.ndjson, ../data/cut.csv.gz]")).run() }
        #expect(failure.status == .usage)
        #expect(failure.message == "../data/cut.csv.gz: gzip stream truncated at byte \(full.count - 6)")
    }

    @Test func templateErrorsAreExitTwo() throws {
        try writeAudience()
        let path = try dir.write("jobs/bad.yaml", """
            campaign: scan
            audience: { files: [../data/b.ndjson] }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template: { aps: { alert: "hi", badge: -1 } } }
            """)
        let failure = try #require(throws: RunFailure.self) { try AudienceScan(spec: try JobLoader.load(path: path)) }
        #expect(failure.status == .usage)
        #expect(failure.message.contains("badge"))
    }

    /// Progress reports compressed bytes against the total, and a stop request ends the scan.
    @Test func progressAndStop() throws {
        // Random tokens, so that gzip cannot shrink the file to one read: progress must move.
        var rng = SystemRandomNumberGenerator()
        var rows = ["id,token,name,unread"]
        for i in 0..<22_000 {
            rows.append("u\(i),\((0..<4).map { _ in String(format: "%016llx", rng.next() as UInt64) }.joined()),n,1")
        }
        try dir.writeGzip("data/big.csv.gz", rows.joined(separator: "\n"))
        let scan = try AudienceScan(spec: try spec(files: "../data/big.csv.gz"))
        var seen: [AudienceScanProgress] = []
        let result = try scan.run(progressEvery: 5_000, progress: { seen.append($0) })
        let size = try FileManager.default.attributesOfItem(atPath: dir.file("data/big.csv.gz"))[.size] as? Int
        #expect(seen.map(\.rows) == [5_000, 10_000, 15_000, 20_000, 22_000])
        #expect(seen.allSatisfy { $0.totalBytes == size })
        #expect(seen.map(\.bytesRead) == seen.map(\.bytesRead).sorted())
        #expect(seen.first!.bytesRead < size!)
        #expect(seen.last!.bytesRead == size)
        #expect(result.distinct == 22_000)

        var asked = 0
        let failure = try #require(throws: RunFailure.self) {
            try scan.run(progressEvery: 5_000, shouldStop: { asked += 1; return asked == 2 })
        }
        #expect(failure.status == .incomplete)
        #expect(failure.message == "stopped while reading the audience (10,000 rows read); nothing was sent")
    }
}
