import Foundation
import HeraldCore
import HeraldPayload
import Testing

/// Plain placeholders: defaults, dotted names, whitespace, and data that tries to break the JSON.
@Suite struct PlaceholderTests {
    let greeting = #"{"aps":{"alert":{"title":"Hi {{ first_name | there }}","body":"{{user.city}} {{greeting|}}!"}},"n":"{{n}}"}"#

    @Test func fieldsAndDefaults() throws {
        let renderer = try PayloadRenderer(push: Fixture.push(greeting, missingField: .error))
        let full = renderer.render(Fixture.strings(["first_name": "Ana", "user.city": "Oslo", "greeting": "hej", "n": "1"]), locale: nil)
        #expect(Fixture.text(full) == #"{"aps":{"alert":{"title":"Hi Ana","body":"Oslo hej!"}},"n":"1"}"#)
        let defaults = renderer.render(Fixture.strings(["user.city": "Oslo", "n": "1"]), locale: nil)
        #expect(Fixture.text(defaults) == #"{"aps":{"alert":{"title":"Hi there","body":"Oslo !"}},"n":"1"}"#)
    }

    /// An empty CSV cell or a JSON null is how exports say "no value": the default applies,
    /// else the missing_field policy, so nobody gets "Hi ,".
    @Test func emptyAndNullCountAsMissing() throws {
        let renderer = try PayloadRenderer(push: Fixture.push(greeting))
        let defaults = renderer.render(Fixture.record(["first_name": .string(""), "user.city": .string("Oslo"), "n": .string("1"), "greeting": .null]), locale: nil)
        #expect(Fixture.text(defaults) == #"{"aps":{"alert":{"title":"Hi there","body":"Oslo !"}},"n":"1"}"#)
        let empty = renderer.render(Fixture.strings(["first_name": "Ana", "user.city": "", "n": "1"]), locale: nil)
        #expect(Fixture.text(empty) == "failure(missing_field, user.city, field user.city is empty (used in aps.alert.body))")
        let null = renderer.render(Fixture.record(["user.city": .null, "n": .string("1")]), locale: nil)
        #expect(Fixture.text(null) == "failure(missing_field, user.city, field user.city is null (used in aps.alert.body))")
    }

    @Test func nonStringFieldsBecomeText() throws {
        let renderer = try PayloadRenderer(push: Fixture.push(#"{"aps":{"alert":"{{a}}|{{b}}|{{c|-}}|{{d}}"}}"#))
        let out = renderer.render(Fixture.record([
            "a": .number("4.50"), "b": .bool(true), "c": .null, "d": .json(#"{"k":"v"}"#),
        ]), locale: nil)
        #expect(Fixture.text(out) == #"{"aps":{"alert":"4.50|true|-|{\"k\":\"v\"}"}}"#)
    }

    static let hostile: [String] = [
        #"He said "hi" \o/ \"#, "a}}b{{c}}", "{{first_name}}", "line1\nline2\r\ttab",
        "nul\u{0}bell\u{7}esc\u{1B}del\u{7F}", "👩‍👩‍👧‍👦 🇳🇴 e\u{301}", "مرحبا بالعالم \u{202E}abc",
        "日本語のテキスト、中文", "\u{2028}\u{2029}", "</script><b>",
    ]

    @Test(arguments: hostile)
    func injectionDataStaysExactText(value: String) throws {
        let template = #"{"aps":{"alert":{"title":"{{v}}","body":"<{{v}}>","loc-args":["{{v}}"]}},"custom":{"k":"{{v}}"}}"#
        let renderer = try PayloadRenderer(push: Fixture.push(template))
        let bytes = try #require(Fixture.bytes(renderer.render(Fixture.strings(["v": value]), locale: nil)))
        let object = try #require(Fixture.foundationObject(bytes) as? [String: Any], "not JSON: \(String(decoding: bytes, as: UTF8.self))")
        let alert = try #require((object["aps"] as? [String: Any])?["alert"] as? [String: Any])
        #expect(alert["title"] as? String == value)
        #expect(alert["body"] as? String == "<\(value)>")
        #expect((alert["loc-args"] as? [String])?.first == value)
        #expect((object["custom"] as? [String: Any])?["k"] as? String == value)
        // Our own parser agrees, scalar for scalar (Foundation may normalize some strings).
        let parsed = try #require(TestJSON.parse(String(decoding: bytes, as: UTF8.self)))
        #expect(parsed["aps"]?["alert"]?["title"] == .string(value))
        // Non-ASCII stays raw UTF-8: Apple does not support \u notation in alert text.
        #expect(!String(decoding: bytes, as: UTF8.self).contains("\\u2") && !String(decoding: bytes, as: UTF8.self).contains("\\ud"))
    }

    /// Apple: "The JSON \U notation is not supported. Put the actual UTF-8 character in the alert
    /// text instead." The value's own bytes must appear verbatim; no \u escape anywhere.
    @Test(arguments: ["👩‍👩‍👧‍👦 🇳🇴", "مرحبا بالعالم \u{202E}abc", "日本語のテキスト、中文", "한국어", "Zoë e\u{301}", "\u{2028}\u{2029}\u{7F}"])
    func nonASCIIIsRawUTF8(value: String) throws {
        let renderer = try PayloadRenderer(push: Fixture.push(#"{"aps":{"alert":{"title":"{{v}}","loc-args":["{{v}}"]}}}"#))
        let bytes = try #require(Fixture.bytes(renderer.render(Fixture.strings(["v": value]), locale: nil)))
        #expect(bytes == Array(#"{"aps":{"alert":{"title":"\#(value)","loc-args":["\#(value)"]}}}"#.utf8))
        #expect(!String(decoding: bytes, as: UTF8.self).contains("\\u"))
    }

    @Test func nulIsEscapedAsUnicodeEscape() throws {
        let renderer = try PayloadRenderer(push: Fixture.push(#"{"aps":{"alert":"{{v}}"}}"#))
        let out = renderer.render(Fixture.strings(["v": "a\u{0}b"]), locale: nil)
        #expect(Fixture.text(out) == #"{"aps":{"alert":"a\u0000b"}}"#)
    }

    @Test func literalTemplateTextIsEscapedToo() throws {
        let template = JSONValue.object([
            .init("aps", .object([.init("alert", .string("Say \"{{w|hi}}\"\n\\ 🎉"))])),
            .init("k\"ey", .string("x")),
        ])
        let renderer = try PayloadRenderer(push: PushSpec(type: .alert, priority: 10, template: template))
        let bytes = try #require(Fixture.bytes(renderer.render(Fixture.record([:]), locale: nil)))
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"aps":{"alert":"Say \"hi\"\n\\ 🎉"},"k\"ey":"x"}"#)
        #expect(Fixture.foundationObject(bytes) != nil)
    }

    @Test func missingFieldUnderEachPolicy() throws {
        let template = #"{"aps":{"alert":"Hi {{first_name}}"}}"#
        let record = Fixture.strings([:])
        let error = try PayloadRenderer(push: Fixture.push(template, missingField: .error)).render(record, locale: nil)
        #expect(Fixture.text(error) == "failure(missing_field, first_name, field first_name is missing (used in aps.alert))")
        let empty = try PayloadRenderer(push: Fixture.push(template, missingField: .empty)).render(record, locale: nil)
        #expect(Fixture.text(empty) == #"{"aps":{"alert":"Hi "}}"#)
        let skip = try PayloadRenderer(push: Fixture.push(template, missingField: .skipRecipient)).render(record, locale: nil)
        #expect(Fixture.text(skip) == "skip(first_name)")
    }
}
