import Foundation
import HeraldCore
import HeraldPayload
import Testing

/// The payload limit: report oversize rows, or shorten the alert body to fit.
@Suite struct SizeTests {
    let template = #"{"aps":{"alert":{"title":"{{title|Hi}}","body":"{{body}}"},"badge":1},"id":"{{id|x}}"}"#

    @Test func oversizeIsAnErrorByDefault() throws {
        let renderer = try PayloadRenderer(push: Fixture.push(template))
        let body = String(repeating: "a", count: 4650)
        let out = renderer.render(Fixture.strings(["body": body]), locale: nil)
        #expect(Fixture.text(out) == "failure(payload_too_large, , payload is 4711 bytes; the limit is 4096)")
        let fits = renderer.render(Fixture.strings(["body": String(repeating: "a", count: 4035)]), locale: nil)
        #expect(Fixture.bytes(fits)?.count == 4096)
    }

    @Test(arguments: [
        "é", "日本語", "👩‍👩‍👧‍👦", "🇳🇴", "e\u{301}", "a\"b\\c\n", "مرحبا ", "x\u{0}",
    ])
    func truncationKeepsGraphemesAndJSON(unit: String) throws {
        let renderer = try PayloadRenderer(push: Fixture.push(template, oversize: .truncateBody))
        let body = String(repeating: unit, count: 6000 / unit.utf8.count + 1)
        let bytes = try #require(Fixture.bytes(renderer.render(Fixture.strings(["body": body, "id": "42"]), locale: nil)))
        #expect(bytes.count <= 4096)
        #expect(bytes.count > 4096 - 40)
        let text = try #require(String(validating: bytes, as: UTF8.self), "not UTF-8")
        let object = try #require(Fixture.foundationObject(bytes) as? [String: Any], "not JSON")
        #expect(object["id"] as? String == "42")
        let parsed = try #require(TestJSON.parse(text))
        guard case .string(let shortened)? = parsed["aps"]?["alert"]?["body"] else {
            Issue.record("no body in \(text)"); return
        }
        #expect(shortened.hasSuffix("…"))
        let kept = String(shortened.dropLast())
        // Whole graphemes of the original, nothing split: the kept text is, scalar for scalar,
        // the first kept.count characters of the body (a split "e" + U+0301 would not be).
        #expect(kept.count > 0)
        #expect(String(body.prefix(kept.count)).unicodeScalars.elementsEqual(kept.unicodeScalars))
    }

    @Test func truncatesStringAlert() throws {
        let renderer = try PayloadRenderer(push: Fixture.push(#"{"aps":{"alert":"Dear {{name}}: {{news}}"}}"#, oversize: .truncateBody))
        let bytes = try #require(Fixture.bytes(renderer.render(Fixture.strings(["name": "Zoë", "news": String(repeating: "🎉 ", count: 2000)]), locale: nil)))
        #expect(bytes.count <= 4096)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix(#"{"aps":{"alert":"Dear Zoë: 🎉 🎉"#))
        #expect(text.hasSuffix("🎉…\"}}"))
    }

    @Test func truncationFailsWhenOtherFieldsAreTooBig() throws {
        let renderer = try PayloadRenderer(push: Fixture.push(template, oversize: .truncateBody))
        let out = renderer.render(Fixture.strings(["body": "short", "id": String(repeating: "z", count: 5000)]), locale: nil)
        #expect(Fixture.text(out) == "failure(payload_too_large, , payload is 5065 bytes; the limit is 4096; shortening aps.alert.body cannot make it fit)")
        let noBody = try PayloadRenderer(push: Fixture.push(#"{"aps":{"alert":{"title":"{{t}}"}}}"#, oversize: .truncateBody))
        let out2 = noBody.render(Fixture.strings(["t": String(repeating: "z", count: 5000)]), locale: nil)
        #expect(Fixture.text(out2) == "failure(payload_too_large, , payload is 5030 bytes; the limit is 4096; there is no aps.alert.body to shorten)")
    }
}
