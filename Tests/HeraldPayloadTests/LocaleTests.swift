import HeraldCore
import HeraldPayload
import Testing

/// Locale variants: exact match, then language, then the default template.
@Suite struct LocaleTests {
    let renderer: PayloadRenderer?

    init() {
        renderer = try? PayloadRenderer(push: Fixture.push(
            #"{"aps":{"alert":"Hello {{name}}"}}"#,
            locales: [
                ("fr", #"{"aps":{"alert":"Bonjour {{name}}"}}"#),
                ("fr-CA", #"{"aps":{"alert":"Allô {{name}}"}}"#),
                ("pt_BR", #"{"aps":{"alert":"Olá {{name}}"}}"#),
            ]))
    }

    func alert(_ locale: String?) throws -> String {
        let renderer = try #require(renderer)
        return Fixture.text(renderer.render(Fixture.strings(["name": "Lu"]), locale: locale))
    }

    @Test(arguments: [
        ("fr-CA", "Allô Lu"), ("fr_CA", "Allô Lu"), ("FR-ca", "Allô Lu"),
        ("fr", "Bonjour Lu"), ("fr-FR", "Bonjour Lu"), ("fr_BE", "Bonjour Lu"),
        ("pt-BR", "Olá Lu"), ("pt_BR", "Olá Lu"), ("pt", "Hello Lu"), ("pt-PT", "Hello Lu"),
        ("de-DE", "Hello Lu"), ("", "Hello Lu"),
    ])
    func fallsBackFromRegionToLanguageToDefault(locale: String, expected: String) throws {
        #expect(try alert(locale) == #"{"aps":{"alert":"\#(expected)"}}"#)
    }

    @Test func scriptSubtagsFallBackOneAtATime() throws {
        let renderer = try PayloadRenderer(push: Fixture.push(
            #"{"aps":{"alert":"Hello"}}"#,
            locales: [("zh", #"{"aps":{"alert":"你好"}}"#), ("zh-Hant", #"{"aps":{"alert":"妳好"}}"#)]))
        #expect(renderer.templateSource(for: "zh-Hant-TW") == "push.locales.zh-Hant")
        #expect(renderer.templateSource(for: "zh_hant") == "push.locales.zh-Hant")
        #expect(renderer.templateSource(for: "zh-Hans-CN") == "push.locales.zh")
        #expect(renderer.templateSource(for: "zhx") == "push.template")
        #expect(Fixture.text(renderer.render(Fixture.record([:]), locale: "zh-Hant-HK")) == #"{"aps":{"alert":"妳好"}}"#)
    }

    @Test func nilLocaleUsesDefault() throws {
        #expect(try alert(nil) == #"{"aps":{"alert":"Hello Lu"}}"#)
        #expect(renderer?.templateSource(for: "fr-CH") == "push.locales.fr")
        #expect(renderer?.templateSource(for: nil) == "push.template")
    }

    @Test func variantsAreValidatedWithTheirOwnName() {
        let push = Fixture.push(#"{"aps":{"alert":"ok"}}"#, locales: [("fr", #"{"aps":{"alert":{"body":"Salut {{name"}}}"#)])
        #expect(Fixture.templateError(push) == "push.locales.fr: unterminated placeholder in aps.alert.body")
        let badge = Fixture.push(#"{"aps":{"alert":"ok"}}"#, locales: [("de", #"{"aps":{"badge":-1}}"#)])
        #expect(Fixture.templateError(badge) == "push.locales.de: aps.badge must be a non-negative integer or a {{field:int}} placeholder")
    }

    @Test func duplicateLocaleIsAnError() {
        let push = Fixture.push(#"{"aps":{"alert":"ok"}}"#, locales: [("fr_CA", #"{"aps":{"alert":"a"}}"#), ("fr-ca", #"{"aps":{"alert":"b"}}"#)])
        #expect(Fixture.templateError(push) == "push.locales: locale fr-ca appears more than once")
    }
}
