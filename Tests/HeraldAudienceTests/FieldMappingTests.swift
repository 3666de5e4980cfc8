import Testing
import HeraldAudience
import HeraldCore

/// The job's field mapping as the reader applies it: which fields the record carries by name,
/// and which columns a CSV header must have.
@Suite struct FieldMappingTests {
    @Test func csvRecordCarriesIdAndRegisteredAt() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("m.csv", "id,token,registered,locale\nu1,\(token("ab")),2024-05-01T10:00:00Z,fr\n,\(token("cd")),,en\n")
        let spec = AudienceSpec(files: [file], localeField: "locale", idField: "id", registeredAtField: "registered")
        let records = try readAll(file, spec: spec).compactMap(\.record)
        #expect(records.count == 2)
        #expect(records[0].recipientId == "u1")
        #expect(records[0].registeredAt == .string("2024-05-01T10:00:00Z"))
        // An empty CSV field is "no value", not an empty id.
        #expect(records[1].recipientId == nil)
        #expect(records[1].registeredAt == nil)
    }

    @Test func ndjsonRecordCarriesDottedPathsWithTheirTypes() throws {
        let fx = try AudienceFixture()
        let text = """
            {"token":"\(token("ab"))","user":{"id":42,"registered_at":1714557600}}
            {"token":"\(token("cd"))","user":{"id":"u-7","registered_at":null}}
            {"token":"\(token("ef"))"}

            """
        let file = try fx.write("m.ndjson", text)
        let spec = AudienceSpec(files: [file], idField: "user.id", registeredAtField: "user.registered_at")
        let records = try readAll(file, spec: spec).compactMap(\.record)
        #expect(records.map(\.recipientId) == ["42", "u-7", nil])
        #expect(records.map(\.registeredAt) == [.number("1714557600"), nil, nil])
    }

    @Test func withoutMappingTheRecordCarriesNothingExtra() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("plain.csv", "id,token\nu1,\(token("ab"))\n")
        let record = try #require(try readAll(file).first?.record)
        #expect(record.recipientId == nil && record.registeredAt == nil)
        #expect(record.fields["id"] == .string("u1"))
    }

    /// A typo in a field name must stop the run at the header, not quietly empty a report column.
    @Test func csvHeaderMustHaveEveryNamedColumn() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("h.csv", "id,token,locale\nu1,\(token("ab")),fr\n")
        let cases: [(AudienceSpec, String, String)] = [
            (AudienceSpec(files: [], idField: "user_id"), "user_id", "audience.id_field"),
            (AudienceSpec(files: [], localeField: "lang"), "lang", "audience.locale_field"),
            (AudienceSpec(files: [], registeredAtField: "registered_at"), "registered_at", "audience.registered_at_field"),
            ({ var s = AudienceSpec(files: []); s.appField = "app"; return s }(), "app", "audience.app_field"),
            ({ var s = AudienceSpec(files: []); s.environmentField = "env"; return s }(), "env", "audience.environment_field"),
        ]
        for (spec, column, key) in cases {
            let error = readError(file, spec: spec)
            #expect(error == .missingColumn(file: "samples/h.csv", line: 1, column: column, key: key, columns: ["id", "token", "locale"]))
            #expect(error?.description == "samples/h.csv line 1: header has no column \"\(column)\" named by \(key) (columns: id, token, locale)")
        }
        #expect(readError(file, spec: AudienceSpec(files: [], localeField: "locale", idField: "id")) == nil)
    }
}

/// `audience.channel_field`: a broadcast audience's rows name channels, checked as APNs writes
/// them (base64) instead of as device tokens, each problem with its own reason.
@Suite struct ChannelFieldTests {
    @Test func csvRowsNameChannels() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("c.csv", "match,channel\n42, bWF0Y2gtNDI= \n43,\n44,not base64!\n45,abcd\n")
        var spec = AudienceSpec(files: [file])
        spec.channelField = "channel"
        let events = try readAll(file, spec: spec)
        #expect(events.count == 4)
        #expect(events[0].record?.token.hex == "bWF0Y2gtNDI=", "spaces around it dropped")
        #expect(events[1].invalid.map { [$0.reason.rawValue, $0.field, "\($0.location.line)"] } == ["missing_channel_id", "channel", "3"])
        #expect(events[2].invalid?.reason == .invalidChannelId && events[2].invalid?.detail.hasPrefix("not a broadcast channel id") == true)
        // Four characters of base64 are a channel id as far as anyone but APNs can tell.
        #expect(events[3].record?.token.hex == "abcd")
    }

    @Test func aMissingChannelColumnNamesTheJobKey() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("c.csv", "match,token\n42,bWF0Y2gtNDI=\n")
        var spec = AudienceSpec(files: [file])
        spec.channelField = "channel"
        #expect(throws: AudienceError.self) { _ = try readAll(file, spec: spec) }
        do { _ = try readAll(file, spec: spec) } catch {
            #expect("\(error)".contains("header has no column \"channel\" named by audience.channel_field"), "\(error)")
        }
    }

    @Test func ndjsonRowsNameChannels() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("c.ndjson", """
            {"channel":"bWF0Y2gtNDI=","match":42}
            {"channel":null}
            {"channel":12345678}
            {"channel":{"id":"x"}}
            {"match":1}

            """)
        var spec = AudienceSpec(files: [file])
        spec.channelField = "channel"
        let events = try readAll(file, spec: spec)
        #expect(events[0].record?.token.hex == "bWF0Y2gtNDI=")
        #expect(events.dropFirst().map { $0.invalid?.reason } == [.missingChannelId, .invalidChannelId, .invalidChannelId, .missingChannelId])
    }

    /// Many apps: each row's app and environment are carried as text, read by column in a CSV
    /// and by dotted path in NDJSON; an empty value is no value.
    @Test func recordsCarryTheirAppAndEnvironment() throws {
        let fx = try AudienceFixture()
        var spec = AudienceSpec(files: [])
        spec.appField = "app"
        spec.environmentField = "target.env"
        let csv = try fx.write("apps.csv", "token,app,target.env\n\(token("ab")),acme,sandbox\n\(token("cd")),,\n")
        let rows = try readAll(csv, spec: spec).compactMap(\.record)
        #expect(rows.map(\.app) == ["acme", nil] && rows.map(\.environment) == ["sandbox", nil])
        let ndjson = try fx.write("apps.ndjson", """
            {"token":"\(token("ab"))","app":"acme-ipad","target":{"env":"production"}}
            {"token":"\(token("cd"))","app":null}

            """)
        let lines = try readAll(ndjson, spec: spec).compactMap(\.record)
        #expect(lines.map(\.app) == ["acme-ipad", nil] && lines.map(\.environment) == ["production", nil])
    }
}
