import HeraldCore
import HeraldPayload
import Testing

/// Job-level template checks: each rule with the message the operator sees.
@Suite struct ValidationTests {
    static let cases: [(template: String, message: String)] = [
        (#"[1]"#, #"push.template: top level must be an object with an "aps" dictionary"#),
        (#"{"alert":"hi"}"#, #"push.template: top level must be an object with an "aps" dictionary"#),
        (#"{"aps":"hi"}"#, #"push.template: top level must be an object with an "aps" dictionary"#),
        (#"{"aps":{"alert":"a","aps":{}},"aps":{}}"#, "push.template: duplicate key aps"),
        (#"{"aps":{"alert":"a","badge":1,"badge":2}}"#, "push.template: duplicate key aps.badge"),
        (#"{"aps":{"alert":"a","colour":"red"}}"#, "push.template: unknown key aps.colour; allowed here: alert, badge, sound, thread-id, category, content-available, mutable-content, target-content-id, interruption-level, relevance-score, filter-criteria, stale-date, content-state, timestamp, event, dismissal-date, attributes-type, attributes, input-push-token, input-push-channel, content-changed"),
        (#"{"aps":{"alert":{"titel":"x"}}}"#, "push.template: unknown key aps.alert.titel; allowed here: title, subtitle, body, launch-image, title-loc-key, title-loc-args, subtitle-loc-key, subtitle-loc-args, loc-key, loc-args, action-loc-key, summary-arg, summary-arg-count"),
        (#"{"aps":{"badge":-1}}"#, "push.template: aps.badge must be a non-negative integer or a {{field:int}} placeholder"),
        (#"{"aps":{"badge":1.5}}"#, "push.template: aps.badge must be a non-negative integer or a {{field:int}} placeholder"),
        (#"{"aps":{"badge":"5"}}"#, "push.template: aps.badge must be a non-negative integer or a {{field:int}} placeholder"),
        (#"{"aps":{"badge":"{{n}}"}}"#, "push.template: aps.badge must be a non-negative integer or a {{field:int}} placeholder"),
        (#"{"aps":{"badge":"{{n:bool}}"}}"#, "push.template: aps.badge must be a non-negative integer or a {{field:int}} placeholder"),
        (#"{"aps":{"content-available":true}}"#, "push.template: aps.content-available must be 1"),
        (#"{"aps":{"alert":"a","mutable-content":0}}"#, "push.template: aps.mutable-content must be 1"),
        (#"{"aps":{"alert":"a","interruption-level":"urgent"}}"#, "push.template: aps.interruption-level must be one of passive, active, time-sensitive, critical"),
        (#"{"aps":{"alert":"a","relevance-score":"high"}}"#, "push.template: aps.relevance-score must be a number from 0.0 to 1.0 or a {{field:number}} placeholder"),
        (#"{"aps":{"alert":"a","sound":7}}"#, "push.template: aps.sound must be a string or a dictionary {critical, name, volume}"),
        (#"{"aps":{"alert":"a","sound":{"critical":1,"name":"x","volume":1.5}}}"#, "push.template: aps.sound.volume must be a number from 0.0 to 1.0 or a {{field:number}} placeholder"),
        (#"{"aps":{"alert":"a","sound":{"critical":2}}}"#, "push.template: aps.sound.critical must be 0 or 1"),
        (#"{"aps":{"alert":"a","sound":{"loud":1}}}"#, "push.template: unknown key aps.sound.loud; allowed here: critical, name, volume"),
        (#"{"aps":{"alert":42}}"#, "push.template: aps.alert must be a string or a dictionary of alert keys"),
        (#"{"aps":{"alert":{"title":7}}}"#, "push.template: aps.alert.title must be a string"),
        (#"{"aps":{"alert":{"body":"{{n:int}}"}}}"#, "push.template: aps.alert.body must be a string"),
        (#"{"aps":{"alert":{"loc-args":["a",1]}}}"#, "push.template: aps.alert.loc-args[1] must be a string"),
        (#"{"aps":{"alert":{"title-loc-args":"a"}}}"#, "push.template: aps.alert.title-loc-args must be an array of strings, or null"),
        (#"{"aps":{"alert":{"body":"Hi {{name"}}}"#, "push.template: unterminated placeholder in aps.alert.body"),
        (#"{"aps":{"alert":"a"},"x":["ok","{{y"]}"#, "push.template: unterminated placeholder in x[1]"),
        (#"{"aps":{"alert":"a","event":"begin"}}"#, "push.template: aps.event must be one of start, update, end"),
        (#"{"aps":{"alert":"a","content-state":[]}}"#, "push.template: aps.content-state must be an object"),
        (#"{"aps":{"alert":"a","timestamp":"{{ts:number}}"}}"#, "push.template: aps.timestamp must be an integer or a {{field:int}} placeholder"),
    ]

    @Test(arguments: cases.indices)
    func rejects(index: Int) {
        let c = Self.cases[index]
        #expect(Fixture.templateError(Fixture.push(c.template)) == c.message, "template \(c.template)")
    }

    @Test(arguments: [
        #"{"aps":{"alert":{"title":"t","title-loc-key":null,"action-loc-key":null,"summary-arg":"x","summary-arg-count":2}}}"#,
        #"{"aps":{"alert":"a","badge":0,"sound":{"critical":1,"name":"default","volume":0.5},"thread-id":"t","category":"c"}}"#,
        #"{"aps":{"alert":"a","mutable-content":1,"interruption-level":"time-sensitive","relevance-score":"{{score:number}}"}}"#,
        #"{"aps":{"alert":{"loc-key":"K","loc-args":["{{a}}","{{b|x}}"]},"badge":"{{n:int|0}}","sound":"{{tone|default}}"}}"#,
        #"{"aps":{"alert":"a"},"acme":{"nested":["{{x}}",{"y":"{{y:json}}"}]}}"#,
    ])
    func accepts(template: String) {
        #expect(Fixture.templateError(Fixture.push(template)) == nil)
    }

    @Test func backgroundPushRules() {
        let silent = #"{"aps":{"content-available":1},"sync":"{{since}}"}"#
        #expect(Fixture.templateError(Fixture.push(silent, type: .background, priority: 5)) == nil)
        #expect(Fixture.templateError(Fixture.push(silent, type: .background, priority: 10))
                == "push.priority: a background push must have priority 5, not 10")
        #expect(Fixture.templateError(Fixture.push(#"{"aps":{"content-available":1,"badge":1}}"#, type: .background, priority: 5))
                == "push.template: a background push must not include aps.alert, aps.badge or aps.sound (found aps.badge)")
        #expect(Fixture.templateError(Fixture.push(#"{"aps":{}}"#, type: .background, priority: 5))
                == "push.template: a background push needs aps.content-available: 1")
    }

    @Test func templateAlreadyOverTheLimit() {
        let big = String(repeating: "x", count: 4100)
        #expect(Fixture.templateError(Fixture.push(#"{"aps":{"alert":"\#(big)"}}"#))
                == "push.template: the template is 4120 bytes before any field is filled in; the limit is 4096")
        // VoIP allows 5120 bytes.
        #expect(Fixture.templateError(Fixture.push(#"{"aps":{"alert":"\#(big)"}}"#, type: .voip)) == nil)
    }
}
