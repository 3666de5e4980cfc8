import Testing
import HeraldAudience
import HeraldCore

@Suite struct CSVReaderTests {
    @Test func readsPlainCSVWithFieldsAndLines() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("a.csv", "token,first_name,unread\n\(token("ab")),Zoë,3\n\(token("cd")),Ben,0\n")
        let reader = try AudienceFileReader(file: file, spec: AudienceSpec(files: [file]))
        #expect(reader.detectedFormat == .csv)
        #expect(!reader.isCompressed)
        var events: [AudienceEvent] = []
        while let e = try reader.next() { events.append(e) }
        #expect(events.count == 2)
        #expect(reader.rowsRead == 2)
        #expect(reader.compressedBytesRead == reader.fileSize)
        let first = try #require(events[0].record)
        #expect(first.location == RowLocation(file: "samples/a.csv", line: 2))
        #expect(first.token.hex == token("ab"))
        #expect(first.fields["first_name"] == .string("Zoë"))
        #expect(first.fields["unread"] == .string("3"))
        #expect(first.fields["token"] == .string(token("ab")))
        #expect(events[1].line == 3)
    }

    @Test func ignoresBOMAndCRLF() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("bom.csv", "\u{FEFF}token,name\r\n\(token("12")),Ann\r\n\(token("34")),\"Bo\"\r\n")
        let events = try readAll(file)
        #expect(events.count == 2)
        #expect(events[0].record?.fields["name"] == .string("Ann"))
        #expect(events[1].record?.fields["name"] == .string("Bo"))
        #expect(events[1].line == 3)
    }

    @Test func quotedDelimitersQuotesAndNewlinesKeepLineNumbers() throws {
        let fx = try AudienceFixture()
        let text = [
            "token,name,quote,note",
            #"\#(token("01")),"Smith, John","say ""hi""","first"#,
            "second\r",
            #"third""#,
            #"\#(token("02")),plain,"",x"#,
            #"\#(token("03")),a"b,"tail"end,y"#,
            "",
        ].joined(separator: "\n")
        let events = try readAll(try fx.write("q.csv", text))
        #expect(events.count == 3)
        let first = try #require(events[0].record)
        #expect(first.location.line == 2)
        #expect(first.fields["name"] == .string("Smith, John"))
        #expect(first.fields["quote"] == .string("say \"hi\""))
        #expect(first.fields["note"] == .string("first\nsecond\r\nthird"))
        #expect(events[1].line == 5)
        #expect(events[1].record?.fields["quote"] == .string(""))
        #expect(events[2].line == 6)
        #expect(events[2].record?.fields["name"] == .string("a\"b"))
        #expect(events[2].record?.fields["quote"] == .string("tailend"))
    }

    @Test func headerOnlyFilesHaveNoRows() throws {
        let fx = try AudienceFixture()
        var allow = AudienceSpec(files: [])
        allow.allowEmpty = true
        for file in [try fx.write("h1.csv", "token,name\n"), try fx.write("h2.csv", "token,name")] {
            #expect(readError(file) == .noDataRows(file: file.name, format: .csv), "audience.allow_empty is off by default")
            #expect(try readAll(file, spec: allow).isEmpty)
        }
        let nd = try fx.write("e.ndjson", "\n")
        #expect(readError(nd, spec: AudienceSpec(files: [], format: .ndjson)) == .noDataRows(file: nd.name, format: .ndjson))
    }

    @Test func skipsEmptyLinesButCountsThem() throws {
        let fx = try AudienceFixture()
        let events = try readAll(try fx.write("e.csv", "\ntoken,name\n\n\(token("aa")),a\n\r\n\n\(token("bb")),b"))
        #expect(events.map(\.line) == [4, 7])
        #expect(events[1].record?.fields["name"] == .string("b"))
    }

    @Test func wrongFieldCountIsAnInvalidRowAndReadingGoesOn() throws {
        let fx = try AudienceFixture()
        let events = try readAll(try fx.write("w.csv", "token,a,b,c,d\n\(token("aa")),1,2,3\n\(token("bb")),1,2,3,4\n"))
        let bad = try #require(events[0].invalid)
        #expect(bad == InvalidRow(location: RowLocation(file: "samples/w.csv", line: 2), reason: .wrongFieldCount,
                                  field: "", detail: "expected 5 fields, found 4"))
        #expect(events[1].record != nil)
    }

    @Test func normalizesTokensWithBracketsSpacesAndUpperCase() throws {
        let fx = try AudienceFixture()
        let upper = token("AB").uppercased()
        let spaced = "<" + stride(from: 0, to: 64, by: 8).map { i in
            String(token("Cd")[token("Cd").index(token("Cd").startIndex, offsetBy: i)...].prefix(8))
        }.joined(separator: " ") + ">"
        let events = try readAll(try fx.write("t.csv", "token\n\(upper)\n\"\(spaced)\"\n  \(token("ef"))  \n"))
        #expect(events.compactMap(\.record).map(\.token.hex) == [token("ab"), token("cd"), token("ef")])
    }

    @Test func invalidAndMissingTokensAreInvalidRows() throws {
        let fx = try AudienceFixture()
        let events = try readAll(try fx.write("bad.csv", "name,token\nx,zz\(token("ab").dropFirst(2))\ny,\nz,abcd\n"))
        #expect(events.count == 3)
        #expect(events[0].invalid == InvalidRow(location: RowLocation(file: "samples/bad.csv", line: 2), reason: .invalidToken,
                                                field: "token", detail: DeviceToken.Problem.notHex(position: 0).message))
        #expect(events[1].invalid?.reason == .missingToken)
        #expect(events[1].invalid?.field == "token")
        #expect(events[2].invalid?.reason == .invalidToken)
        #expect(events[2].invalid?.detail == DeviceToken.Problem.implausibleLength(bytes: 2).message)
    }

    @Test func invalidUTF8IsReportedNotRepaired() throws {
        let fx = try AudienceFixture()
        var bytes = Array("token,name\n\(token("ab")),Ren".utf8)
        bytes.append(0xE9)   // Latin-1 é
        bytes += Array("\n\(token("cd")),ok\n".utf8)
        let events = try readAll(try fx.write("u.csv", bytes))
        let bad = try #require(events[0].invalid)
        #expect(bad.reason == .badUTF8)
        #expect(bad.field == "name")
        #expect(bad.detail.contains("byte 4"))
        #expect(events[1].record?.fields["name"] == .string("ok"))
    }

    @Test func customDelimiterAndTokenField() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("s.csv", "id;device\n7;\(token("0f"))\n")
        let spec = AudienceSpec(files: [file], tokenField: "device", delimiter: UInt8(ascii: ";"))
        let events = try readAll(file, spec: spec)
        #expect(events.first?.record?.fields["id"] == .string("7"))
        #expect(events.first?.record?.token.hex == token("0f"))
    }

    @Test func rowsAcrossManyBufferRefillsKeepLineNumbers() throws {
        let fx = try AudienceFixture()
        var text = "token,note\n"
        for i in 0..<30_000 { text += "\(token("a1")),\"row \(i)\nmore, \"\"text\"\" \(String(repeating: "x", count: i % 97))\"\n" }
        let plain = try fx.write("big.csv", text)
        let packed = try fx.write("big.csv.gz", try fx.gzip(text))
        for file in [plain, packed] {
            let events = try readAll(file)
            #expect(events.count == 30_000)
            #expect(events.last?.line == 2 + 29_999 * 2)
            #expect(events.last?.record?.fields["note"] == .string("row 29999\nmore, \"text\" \(String(repeating: "x", count: 29_999 % 97))"))
            #expect(events.allSatisfy { $0.record != nil })
        }
    }
}
