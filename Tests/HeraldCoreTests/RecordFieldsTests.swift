import HeraldCore
import Testing

/// A row's fields kept as bytes until read must read back exactly as the dictionary they replace.
@Suite struct RecordFieldsTests {
    @Test func csvRowsReadBackByName() {
        let header = CSVHeader(columns: ["id", "token", "name", "empty"])
        let values = ["u1", "abcd", "Zoë \"Z\"", ""]
        let fields = header.makeRow(capacity: values.reduce(0) { $0 + $1.utf8.count }) { writer in
            for v in values { Array(v.utf8).withUnsafeBufferPointer { writer.append($0) } }
        }
        #expect(fields["id"] == .string("u1"))
        #expect(fields["name"] == .string("Zoë \"Z\""))
        #expect(fields["empty"] == .string(""))
        #expect(fields["missing"] == nil)
        #expect(fields.dictionary == ["id": .string("u1"), "token": .string("abcd"), "name": .string("Zoë \"Z\""), "empty": .string("")])
        #expect(fields == RecordFields(fields.dictionary))
    }

    @Test func jsonRowsReadBackByPathWithTypes() {
        var builder = JSONRowBuilder()
        for round in 0..<2 {   // the builder is reused line after line
            builder.reset()
            func add(_ path: String, _ kind: JSONRowBuilder.Kind, _ value: String, prefix: Range<Int>? = nil) -> Range<Int> {
                let p = Array(path.utf8).withUnsafeBufferPointer { builder.appendPath(prefix: prefix, key: $0) }
                let start = builder.position
                Array(value.utf8).withUnsafeBufferPointer { builder.append($0) }
                builder.add(path: p, kind: kind, value: start..<builder.position)
                return p
            }
            let user = add("user", .json, #"{"first_name":"Zoë"}"#)
            _ = add("first_name", .string, "Zoë", prefix: user)
            _ = add("n", .number, "-1.50e3")
            _ = add("t", .true, "")
            _ = add("f", .false, "")
            _ = add("z", .null, "")
            _ = add("dup", .string, "first")
            _ = add("dup", .string, "second \(round)")
            _ = add("", .string, "empty key")
            let fields = builder.finish()
            #expect(fields["user.first_name"] == .string("Zoë"))
            #expect(fields["user"] == .json(#"{"first_name":"Zoë"}"#))
            #expect(fields["n"] == .number("-1.50e3"))
            #expect(fields["t"] == .bool(true) && fields["f"] == .bool(false) && fields["z"] == .null)
            #expect(fields["dup"] == .string("second \(round)"), "a key given twice: the later one wins")
            #expect(fields[""] == .string("empty key"))
            #expect(fields["user.first"] == nil && fields["first_name"] == nil && fields["user."] == nil)
            #expect(fields.dictionary.count == 8)
            #expect(builder.text(user) == "user")
        }
    }
}
