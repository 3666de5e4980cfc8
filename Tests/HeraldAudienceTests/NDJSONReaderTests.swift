import Testing
import HeraldAudience
import HeraldCore

@Suite struct NDJSONReaderTests {
    @Test func flattensNestedObjectsAndKeepsTypes() throws {
        let fx = try AudienceFixture()
        let text = """
        {"token":"\(token("ab"))", "user": {"first_name": "Zo\\u00eb", "age": 31, "score": -1.50e3, "vip": true,
        """.replacingOccurrences(of: "\n", with: "") + """
         "tags": ["a", {"b": 1}], "address": {"city": "Köln"}}, "note": null, "off": false, "esc": "q\\"b\\\\s\\/\\n\\ud83d\\ude00"}

        """
        let file = try fx.write("a.ndjson", text)
        let reader = try AudienceFileReader(file: file, spec: AudienceSpec(files: [file]))
        #expect(reader.detectedFormat == .ndjson)
        let record = try #require(try reader.next()?.record)
        #expect(try reader.next() == nil)
        let f = record.fields
        #expect(record.token.hex == token("ab"))
        #expect(f["token"] == .string(token("ab")))
        #expect(f["user.first_name"] == .string("Zoë"))
        #expect(f["user.age"] == .number("31"))
        #expect(f["user.score"] == .number("-1.50e3"))
        #expect(f["user.vip"] == .bool(true))
        #expect(f["user.tags"] == .json("[\"a\",{\"b\":1}]"))
        #expect(f["user.address.city"] == .string("Köln"))
        #expect(f["user.address"] == .json("{\"city\":\"Köln\"}"))
        #expect(f["user"] == .json("{\"first_name\":\"Zo\\u00eb\",\"age\":31,\"score\":-1.50e3,\"vip\":true,\"tags\":[\"a\",{\"b\":1}],\"address\":{\"city\":\"Köln\"}}"))
        #expect(f["note"] == .null)
        #expect(f["off"] == .bool(false))
        #expect(f["esc"] == .string("q\"b\\s/\n😀"))
        #expect(f["user.tags.b"] == nil)
    }

    @Test func malformedLinesAreInvalidAndReadingGoesOn() throws {
        let fx = try AudienceFixture()
        let text = [
            "{\"token\":\"\(token("01"))\"}",
            "{\"token\": \"\(token("02"))\", \"name\" \"x\"}",
            "",
            "   ",
            "[1,2]",
            "{\"token\":\"\(token("03"))\"} trailing",
            "{\"token\":\"\(token("04"))\", \"s\": \"\\ud800\"}",
            "{\"token\":\"\(token("05"))\",\"n\":01}",
            "{\"token\":\"\(token("06"))\"}",
        ].joined(separator: "\r\n")   // and no newline after the last line
        let events = try readAll(try fx.write("m.ndjson.gz", try fx.gzip(text)))
        #expect(events.map(\.line) == [1, 2, 5, 6, 7, 8, 9])
        #expect(events[0].record != nil)
        let bad = try #require(events[1].invalid)
        #expect(bad.reason == .malformedJSON)
        #expect(bad.detail == "expected ':' after a key at column 86")
        #expect(events[2].invalid?.detail == "line is not a JSON object (it starts with '[' at column 1)")
        #expect(events[3].invalid?.detail.hasPrefix("unexpected text after the object") == true)
        #expect(events[4].invalid?.detail.hasPrefix("unpaired surrogate") == true)
        #expect(events[5].invalid?.reason == .malformedJSON)
        #expect(events[6].record?.token.hex == token("06"))
    }

    @Test func tokenProblemsAndBadUTF8() throws {
        let fx = try AudienceFixture()
        var bytes = Array("{\"token\":\"\(token("ab"))\",\"user\":{\"name\":\"Ren".utf8)
        bytes.append(0xE9)
        bytes += Array("\"}}\n{\"name\":\"x\"}\n{\"token\":null}\n{\"token\":\"nothex\"}\n{\"token\":true}\n".utf8)
        let events = try readAll(try fx.write("t.ndjson", bytes))
        #expect(events[0].invalid?.reason == .badUTF8)
        #expect(events[0].invalid?.field == "user.name")
        #expect(events[1].invalid?.reason == .missingToken)
        #expect(events[2].invalid?.reason == .missingToken)
        #expect(events[3].invalid == InvalidRow(location: RowLocation(file: "samples/t.ndjson", line: 4), reason: .invalidToken,
                                                field: "token", detail: DeviceToken.Problem.notHex(position: 0).message))
        #expect(events[4].invalid?.reason == .invalidToken)
    }

    @Test func formatFromSpecOverridesDetection() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("x.txt", "\n  {\"token\":\"\(token("ab"))\",\"n\":1}\n")
        let reader = try AudienceFileReader(file: file, spec: AudienceSpec(files: [], format: .auto))
        #expect(reader.detectedFormat == .ndjson)
        #expect(try reader.next()?.line == 2)
        // Forced to CSV, the JSON line is a header without a "token" column.
        guard case .missingTokenColumn(_, 2, "token", _) = readError(file, spec: AudienceSpec(files: [], format: .csv)) else {
            Issue.record("a JSON line read as CSV must fail on the header")
            return
        }
    }
}
