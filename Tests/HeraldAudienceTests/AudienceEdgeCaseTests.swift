import Foundation
import Testing
import HeraldAudience
import HeraldCore

/// The issue's "Done means" cases not covered by the per-format suites: the same rules through
/// gzip, other delimiters, and the odd corners of real exports.
@Suite struct AudienceEdgeCaseTests {
    @Test func tabAndSemicolonDelimitersWithQuotedDelimiters() throws {
        let fx = try AudienceFixture()
        for (byte, sep) in [(UInt8(ascii: "\t"), "\t"), (UInt8(ascii: ";"), ";")] {
            let text = "id\(sep)token\(sep)name\n1\(sep)\(token("ab"))\(sep)\"Smith\(sep) John\"\n2\(sep)\(token("cd"))\(sep)a,b\n"
            let file = try fx.write("d\(byte).csv", text)
            let events = try readAll(file, spec: AudienceSpec(files: [], delimiter: byte))
            #expect(events.compactMap { $0.record?.fields["name"] } == [.string("Smith\(sep) John"), .string("a,b")])
            #expect(events.map(\.line) == [2, 3])
        }
    }

    @Test func wrongDelimiterIsAHeaderErrorNotGarbage() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("semi.csv", "id;token\n1;\(token("ab"))\n")
        #expect(readError(file) == .missingTokenColumn(file: "samples/semi.csv", line: 1, column: "token", columns: ["id;token"]))
    }

    @Test func bomAndCRLFInAGzipFile() throws {
        let fx = try AudienceFixture()
        let text = "\u{FEFF}id,token\r\n1,\(token("ab"))\r\n\r\n2,\"\(token("cd"))\"\r\n"
        let events = try readAll(try fx.write("bom.csv.gz", try fx.gzip(text)))
        #expect(events.compactMap { $0.record?.token.hex } == [token("ab"), token("cd")])
        #expect(events.map(\.line) == [2, 4])
        #expect(events[0].record?.fields["id"] == .string("1"))   // not "\u{FEFF}id"
    }

    @Test func ndjsonWithBOMIsDetectedAsNDJSON() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("bom.ndjson", "\u{FEFF}{\"token\":\"\(token("ab"))\"}\r\n")
        let reader = try AudienceFileReader(file: file, spec: AudienceSpec(files: []))
        #expect(reader.detectedFormat == .ndjson)
        #expect(try reader.next()?.record?.token.hex == token("ab"))
    }

    /// gzip(1) on a split export, or `cat a.gz b.gz`: a record may straddle two members.
    @Test func recordSplitAcrossGzipMembers() throws {
        let fx = try AudienceFixture()
        let bytes = try fx.gzip("token,name\n\(token("ab")),A") + fx.gzip("nn\n\(token("cd")),\"Be\n") + fx.gzip("n\"\n")
        let events = try readAll(try fx.write("split.csv.gz", bytes))
        #expect(events.compactMap { $0.record?.fields["name"] } == [.string("Ann"), .string("Be\nn")])
        #expect(events.map(\.line) == [2, 3])
    }

    @Test func ndjsonMalformedLinesBetweenGoodOnesInGzip() throws {
        let fx = try AudienceFixture()
        let text = """
            {"token":"\(token("01")),"note":"a\\nb"}
            {"token":"\(token("02"))","note":"x\\ny"}
            not json at all
            {"token":"\(token("03"))"}
            """
        let events = try readAll(try fx.write("mid.ndjson.gz", try fx.gzip(text)))
        #expect(events.map(\.line) == [1, 2, 3, 4])
        #expect(events[0].invalid?.reason == .malformedJSON)
        #expect(events[1].record?.fields["note"] == .string("x\ny"))
        #expect(events[2].invalid?.reason == .malformedJSON)
        #expect(events[2].invalid?.location == RowLocation(file: "samples/mid.ndjson.gz", line: 3))
        #expect(events[3].record?.token.hex == token("03"))
    }

    @Test func headerOnlyGzipAndHeaderWithBlankLines() throws {
        let fx = try AudienceFixture()
        let gz = try fx.write("h.csv.gz", try fx.gzip("token,name\r\n")), blank = try fx.write("h2.csv", "token,name\n\n\r\n\n")
        #expect(readError(gz) == .noDataRows(file: gz.name, format: .csv))
        #expect(readError(blank) == .noDataRows(file: blank.name, format: .csv))
        var allow = AudienceSpec(files: [])
        allow.allowEmpty = true
        #expect(try readAll(gz, spec: allow).isEmpty && readAll(blank, spec: allow).isEmpty)
    }

    @Test func tokenSpellingsNormalizeToOneToken() throws {
        let fx = try AudienceFixture()
        let hex = "52738d8979ab4b64e4097545c922a10e0dd9a1cb4b27de72b9b0b2f131b82769"
        let spaced = "<" + stride(from: 0, to: 64, by: 8).map { i in
            String(hex.dropFirst(i).prefix(8)).uppercased()
        }.joined(separator: " ") + ">"
        let text = "token\n\(hex)\n\(hex.uppercased())\n\"\(spaced)\"\n\" <\(hex)> \"\n"
        let events = try readAll(try fx.write("spell.csv", text))
        #expect(events.count == 4)
        #expect(events.allSatisfy { $0.record?.token.hex == hex })
    }

    @Test func oddAndImplausibleTokensSayWhy() throws {
        let fx = try AudienceFixture()
        let long = String(repeating: "ab", count: 257)
        let events = try readAll(try fx.write("odd.csv", "token\n\(token("ab").dropLast())\n\(long)\n<>\n"))
        #expect(events.map { $0.invalid?.reason } == [.invalidToken, .invalidToken, .missingToken])
        #expect(events[0].invalid?.detail == DeviceToken.Problem.oddLength(63).message)
        #expect(events[1].invalid?.detail == DeviceToken.Problem.implausibleLength(bytes: 257).message)
    }

    @Test func invalidUTF8InAQuotedFieldAndInTheHeader() throws {
        let fx = try AudienceFixture()
        var bytes = Array("token,name\n\(token("ab")),\"Ren".utf8) + [0xC3] + Array(", x\"\n".utf8)
        bytes += Array("\(token("cd")),fine\n".utf8)
        let events = try readAll(try fx.write("q.csv", bytes))
        #expect(events[0].invalid?.reason == .badUTF8)
        #expect(events[0].invalid?.detail == "invalid UTF-8 at byte 4 of the value (0xc3)")
        #expect(events[1].record?.fields["name"] == .string("fine"))

        let header = Array("token,na".utf8) + [0xFF] + Array("me\n".utf8)
        #expect(readError(try fx.write("hdr.csv", header)) ==
                .badHeader(file: "samples/hdr.csv", line: 1, detail: "header column 2 is not valid UTF-8"))
    }

    @Test func wrongFieldCountSaysWhatWasExpectedBothWays() throws {
        let fx = try AudienceFixture()
        let events = try readAll(try fx.write("w.csv", "token,a\n\(token("ab")),1,2\n\(token("ab"))\n\"\(token("ab"))\",\"x,y\"\n"))
        #expect(events.map { $0.invalid?.detail } == ["expected 2 fields, found 3", "expected 2 fields, found 1", nil])
        #expect(events.map(\.line) == [2, 3, 4])
    }

    /// Progress is the compressed bytes consumed: it moves during the read and ends at the file size.
    @Test func progressCountsCompressedBytes() throws {
        let fx = try AudienceFixture()
        // Random tokens, so that gzip cannot shrink the file into one read.
        var rng = SystemRandomNumberGenerator()
        var text = "token,n\n"
        for i in 0..<60_000 { text += (0..<4).map { _ in String(format: "%016llx", rng.next() as UInt64) }.joined() + ",\(i)\n" }
        let file = try fx.write("p.csv.gz", try fx.gzip(text))
        let reader = try AudienceFileReader(file: file, spec: AudienceSpec(files: []))
        var seen: [Int] = []
        while let _ = try reader.next() {
            if reader.rowsRead % 10_000 == 0 { seen.append(reader.compressedBytesRead) }
        }
        #expect(seen == seen.sorted())
        #expect(Set(seen).count > 2, "progress must move while reading, not jump to the end: \(seen)")
        #expect(seen.first! < reader.fileSize)
        #expect(reader.compressedBytesRead == reader.fileSize)
    }

    /// The string scanner looks at 8 bytes at a time: an escape, a closing quote or a control
    /// character must be found at every offset from a word boundary, and bytes ≥ 0x80 next to them.
    @Test func ndjsonStringEndsAtEveryOffset() throws {
        let fx = try AudienceFixture()
        var lines: [String] = []
        for k in 0..<20 {
            let pad = String(repeating: k % 2 == 0 ? "x" : "é", count: k)
            lines.append(#"{"token":"\#(token("ab"))","a":"\#(pad)\"q","b":"\#(pad)","c":"\#(pad)\\"}"#)
        }
        for k in 0..<20 {
            lines.append("{\"token\":\"\(token("ab"))\",\"a\":\"\(String(repeating: "y", count: k))\u{01}z\"}")
        }
        let events = try readAll(try fx.write("offsets.ndjson", lines.joined(separator: "\n") + "\n"))
        for k in 0..<20 {
            let pad = String(repeating: k % 2 == 0 ? "x" : "é", count: k)
            let fields = try #require(events[k].record?.fields)
            #expect(fields["a"] == .string(pad + "\"q"), "offset \(k)")
            #expect(fields["b"] == .string(pad), "offset \(k)")
            #expect(fields["c"] == .string(pad + "\\"), "offset \(k)")
            #expect(events[20 + k].invalid?.reason == .malformedJSON, "offset \(k)")
            #expect(events[20 + k].invalid?.detail.hasPrefix("unescaped control character byte 0x1") == true, "offset \(k)")
        }
    }

    @Test func ndjsonKeyGivenTwiceKeepsTheLaterValue() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("dup.ndjson", #"{"token":"\#(token("ab"))","name":"first","user":{"a":1},"name":"second","user":{"b":2}}"# + "\n")
        let record = try #require(try readAll(file).first?.record)
        #expect(record.fields["name"] == .string("second"))
        #expect(record.fields["user"] == .json(#"{"b":2}"#))
        #expect(record.fields["user.b"] == .number("2"))
        #expect(record.fields["user.a"] == .number("1"), "paths of the earlier object stay readable, as before")
    }
}
