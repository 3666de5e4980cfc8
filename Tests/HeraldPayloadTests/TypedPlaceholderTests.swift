import Foundation
import HeraldCore
import HeraldPayload
import Testing

/// Whole-value placeholders that change the JSON type (`"{{unread:int}}"` → `7`).
@Suite struct TypedPlaceholderTests {
    let template = #"{"aps":{"alert":"x","badge":"{{unread:int}}"},"score":"{{score:number}}","vip":"{{vip:bool}}","extra":"{{extra:json}}"}"#

    func render(_ fields: [String: FieldValue], policy: MissingFieldPolicy = .error) throws -> String {
        Fixture.text(try PayloadRenderer(push: Fixture.push(template, missingField: policy)).render(Fixture.record(fields), locale: nil))
    }

    @Test func csvStringsConvert() throws {
        let out = try render(["unread": .string(" 007 "), "score": .string("-1.5e3"), "vip": .string("TRUE"),
                              "extra": .string(#" {"a":[1,"b",null]} "#)])
        #expect(out == #"{"aps":{"alert":"x","badge":7},"score":-1.5e3,"vip":true,"extra":{"a":[1,"b",null]}}"#)
    }

    @Test func ndjsonValuesPassThrough() throws {
        let out = try render(["unread": .number("3"), "score": .number("0.25"), "vip": .bool(false), "extra": .json(#"[{"x":1}]"#)])
        #expect(out == #"{"aps":{"alert":"x","badge":3},"score":0.25,"vip":false,"extra":[{"x":1}]}"#)
        let nulls = try render(["unread": .number("0"), "score": .number("1"), "vip": .string("0"), "extra": .null])
        #expect(nulls == #"{"aps":{"alert":"x","badge":0},"score":1,"vip":false,"extra":null}"#)
    }

    @Test(arguments: [
        ("unread", FieldValue.string("seven"), "unread is \"seven\", not a non-negative int (used in aps.badge)"),
        ("unread", .string("-2"), "unread is \"-2\", not a non-negative int (used in aps.badge)"),
        ("unread", .number("2.5"), "unread is \"2.5\", not a non-negative int (used in aps.badge)"),
        ("unread", .bool(true), "unread is \"true\", not a non-negative int (used in aps.badge)"),
        ("score", .string("NaN"), "score is \"NaN\", not a number (used in score)"),
        ("score", .string("01"), "score is \"01\", not a number (used in score)"),
        ("vip", .string("maybe"), "vip is \"maybe\", not a bool (used in vip)"),
        ("extra", .string(#"{"a":}"#), #"extra is "{\"a\":}", not a json (used in extra)"#),
        ("extra", .string("[1,2"), "extra is \"[1,2\", not a json (used in extra)"),
    ] as [(String, FieldValue, String)])
    func badValuesFail(field: String, value: FieldValue, detail: String) throws {
        var fields: [String: FieldValue] = ["unread": .number("1"), "score": .number("1"), "vip": .bool(true), "extra": .null]
        fields[field] = value
        #expect(try render(fields) == "failure(bad_field_value, \(field), \(detail))")
    }

    @Test func typedDefaultsAndMissing() throws {
        let t = #"{"aps":{"badge":"{{unread:int|0}}","alert":"a"},"n":"{{n:number}}"}"#
        let renderer = try PayloadRenderer(push: Fixture.push(t, missingField: .empty))
        #expect(Fixture.text(renderer.render(Fixture.record(["n": .number("2")]), locale: nil)) == #"{"aps":{"badge":0,"alert":"a"},"n":2}"#)
        // `empty` has nothing to put in a number slot, so a missing typed field still fails.
        #expect(Fixture.text(renderer.render(Fixture.record([:]), locale: nil))
                == "failure(missing_field, n, field n is missing (used in n as {{n:number}}))")
        let skipping = try PayloadRenderer(push: Fixture.push(t, missingField: .skipRecipient))
        #expect(Fixture.text(skipping.render(Fixture.record([:]), locale: nil)) == "skip(n)")
    }

    @Test func typedPlaceholderErrorsAtLoad() {
        #expect(Fixture.templateError(Fixture.push(#"{"aps":{"alert":"You have {{n:int}} new"}}"#))
                == "push.template: aps.alert: typed placeholder {{n:int}} must be the whole string value")
        #expect(Fixture.templateError(Fixture.push(#"{"aps":{"alert":"{{n:integer}}"}}"#))
                == "push.template: aps.alert: unknown placeholder type \"integer\" in {{n:integer}} (use int, number, bool or json)")
        #expect(Fixture.templateError(Fixture.push(#"{"aps":{"badge":"{{n:int|lots}}"}}"#))
                == "push.template: aps.badge: default \"lots\" of {{n:int}} is not a valid int")
        #expect(Fixture.templateError(Fixture.push(#"{"aps":{"alert":"{{ | x}}"}}"#))
                == "push.template: aps.alert: empty placeholder name in {{ | x}}")
    }
}
