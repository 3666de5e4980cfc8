import Foundation
import HeraldCore
@testable import HeraldPayload
import Testing

/// Rules that tie the payload to the push type (silent pushes, Live Activities, widgets) and the
/// value ranges that are checked again per row for typed placeholders.
@Suite struct PushRulesTests {
    static let cases: [(template: String, type: PushType, priority: Int, message: String)] = [
        // Silent (background) pushes: only content-available: 1 in aps.
        (#"{"aps":{"content-available":1,"alert":"hi"}}"#, .background, 5,
         "push.template: a background push must not include aps.alert, aps.badge or aps.sound (found aps.alert)"),
        (#"{"aps":{"content-available":1,"sound":"default"}}"#, .background, 5,
         "push.template: a background push must not include aps.alert, aps.badge or aps.sound (found aps.sound)"),
        (#"{"aps":{"badge":"{{n:int}}"}}"#, .background, 5,
         "push.template: a background push must not include aps.alert, aps.badge or aps.sound (found aps.badge)"),
        (#"{"aps":{"content-available":1,"thread-id":"t"}}"#, .background, 5,
         "push.template: a background push has only aps.content-available: 1 in aps (Apple); found aps.thread-id (custom keys go beside aps)"),
        (#"{"aps":{"mutable-content":1}}"#, .background, 5, "push.template: a background push needs aps.content-available: 1"),
        (#"{"aps":{"content-available":0}}"#, .background, 5, "push.template: aps.content-available must be 1"),
        (#"{"aps":{"content-available":"{{flag:int}}"}}"#, .background, 5, "push.template: aps.content-available must be 1"),
        // …and a silent payload sent as an alert push.
        (#"{"aps":{"content-available":1},"since":"{{since}}"}"#, .alert, 10,
         "push.template: aps has content-available: 1 and no alert, badge or sound, which is a background (silent) push: set push.type: background (priority 5), or add an alert"),
        // An alert push that would show nothing.
        (#"{"aps":{"mutable-content":1},"data":"{{x}}"}"#, .alert, 10,
         "push.template: an alert push needs aps.alert, aps.badge or aps.sound; to send data only, use push.type: background with aps.content-available: 1"),
        // Live Activities.
        (#"{"aps":{"alert":"a","event":"update","timestamp":1}}"#, .alert, 10,
         "push.template: aps.event is a Live Activity key: it needs push.type: liveactivity, not alert"),
        (#"{"aps":{"event":"update","content-state":{}}}"#, .liveactivity, 10,
         "push.template: a liveactivity push needs aps.timestamp: the UNIX time (seconds) of its content, or auto for the time each recipient's push is first rendered"),
        (#"{"aps":{"timestamp":1,"content-state":{}}}"#, .liveactivity, 10, "push.template: a liveactivity push needs aps.event (start, update or end)"),
        (#"{"aps":{"event":"pause","timestamp":1,"content-state":{}}}"#, .liveactivity, 10,
         "push.template: aps.event must be one of start, update, end"),
        (#"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes":{},"alert":{"title":"t"}}}"#, .liveactivity, 10,
         "push.template: a Live Activity start (event: start) needs aps.attributes-type (the name of the app's ActivityAttributes type)"),
        (#"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","alert":{"title":"t"}}}"#, .liveactivity, 10,
         "push.template: a Live Activity start (event: start) needs aps.attributes (the activity's static attributes)"),
        (#"{"aps":{"event":"start","timestamp":1,"attributes-type":"A","attributes":{},"alert":{"title":"t"}}}"#, .liveactivity, 10,
         "push.template: a Live Activity start (event: start) needs aps.content-state (the activity's first content state)"),
        (#"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{}}}"#, .liveactivity, 10,
         "push.template: a Live Activity start (event: start) needs aps.alert (a start must alert the person)"),
        (#"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{},"alert":"t","input-push-token":1,"input-push-channel":"dGVzdA=="}}"#, .liveactivity, 10,
         "push.template: a Live Activity start takes aps.input-push-token (updates to a token) or aps.input-push-channel (updates on a broadcast channel), not both"),
        (#"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{},"alert":"t","input-push-channel":"match 42"}}"#, .liveactivity, 10,
         #"push.template: aps.input-push-channel must be a channel id as APNs returns it (base64), not "match 42""#),
        (#"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{},"alert":"t","input-push-token":0}}"#, .liveactivity, 10,
         "push.template: aps.input-push-token must be 1"),
        (#"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{},"alert":"t","dismissal-date":1}}"#, .liveactivity, 10,
         "push.template: aps.dismissal-date only goes with event: end (when to remove an ended activity), not start"),
        (#"{"aps":{"event":"update","timestamp":"AUTO","content-state":{}}}"#, .liveactivity, 10,
         #"push.template: aps.timestamp must be the UNIX time in seconds of the content, or auto (in lower case) for the time each push is first rendered, not "AUTO""#),
        (#"{"aps":{"event":"update","timestamp":"now","content-state":{}}}"#, .liveactivity, 10,
         #"push.template: aps.timestamp must be the UNIX time in seconds of the content, or auto (in lower case) for the time each push is first rendered, not "now""#),
        (#"{"aps":{"event":"update","timestamp":1}}"#, .liveactivity, 10,
         "push.template: a Live Activity update (event: update) needs aps.content-state (the activity's new content state)"),
        (#"{"aps":{"event":"end","timestamp":"auto","dismissal-date":1}}"#, .liveactivity, 10,
         "push.template: a Live Activity end (event: end) needs aps.content-state (the activity's new content state)"),
        (#"{"aps":{"event":"update","timestamp":1,"content-state":{},"attributes-type":"A"}}"#, .liveactivity, 10,
         "push.template: aps.attributes-type only goes with event: start; an update is sent to the activity's own push token"),
        (#"{"aps":{"event":"end","timestamp":1,"content-state":{},"input-push-token":1}}"#, .liveactivity, 10,
         "push.template: aps.input-push-token only goes with event: start; an end is sent to the activity's own push token"),
        (#"{"aps":{"event":"update","timestamp":1,"content-state":{},"dismissal-date":1}}"#, .liveactivity, 10,
         "push.template: aps.dismissal-date only goes with event: end (when to remove an ended activity), not update"),
        (#"{"aps":{"event":"update","timestamp":1,"content-state":{},"stale-date":"soon"}}"#, .liveactivity, 10,
         "push.template: aps.stale-date must be an integer or a {{field:int}} placeholder"),
        (#"{"aps":{"alert":"a","timestamp":"auto"}}"#, .alert, 10,
         "push.template: aps.timestamp is a Live Activity key: it needs push.type: liveactivity, not alert"),
        (#"{"aps":{"event":"update","timestamp":1,"content-state":{},"alert":{"title":"t","launch-image":"x"}}}"#, .liveactivity, 10,
         "push.template: unknown key aps.alert.launch-image; allowed here: title, body, sound"),
        // Ranges: relevance-score 0–1 (any number for Live Activities), volume 0–1, content-changed true.
        (#"{"aps":{"alert":"a","relevance-score":1.5}}"#, .alert, 10,
         "push.template: aps.relevance-score must be a number from 0.0 to 1.0 or a {{field:number}} placeholder"),
        (#"{"aps":{"content-changed":1}}"#, .widgets, 10, "push.template: aps.content-changed must be true"),
        (#"{"aps":{"alert":"a","badge":"{{n:int|-1}}"}}"#, .alert, 10,
         #"push.template: aps.badge: default "-1" of {{n:int}} is not a non-negative int"#),
        (#"{"aps":{"alert":"a","sound":{"critical":1,"name":"x","volume":"{{v:number|2}}"}}}"#, .alert, 10,
         #"push.template: aps.sound.volume: default "2" of {{v:number}} is not a number from 0 to 1"#),
        // Keys are sent as written: a placeholder there is a mistake.
        (#"{"aps":{"alert":"a"},"{{key}}":"v"}"#, .alert, 10,
         "push.template: {{key}}: placeholders are not allowed in keys, only in string values"),
    ]

    @Test(arguments: cases.indices)
    func rejects(index: Int) {
        let c = Self.cases[index]
        #expect(Fixture.templateError(Fixture.push(c.template, type: c.type, priority: c.priority)) == c.message, "template \(c.template)")
    }

    @Test(arguments: [
        (#"{"aps":{"content-available":1},"acme":{"since":"{{since}}"}}"#, PushType.background, 5),
        (#"{"aps":{"content-available":1,"alert":"New mail","badge":1}}"#, .alert, 10),
        (#"{"aps":{"content-changed":true}}"#, .widgets, 10),
        (#"{"aps":{"content-changed":true}}"#, .controls, 5),
        (#"{"aps":{"event":"update","timestamp":"{{ts:int}}","content-state":{"eta":"{{eta}}"},"relevance-score":75,"alert":{"title":{"loc-key":"ETA","loc-args":["{{eta}}"]},"body":"On its way","sound":"chime.aiff"}}}"#, .liveactivity, 10),
        (#"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"Order","attributes":{"id":"{{id}}"},"alert":{"title":"t","body":"b"},"input-push-token":1}}"#, .liveactivity, 5),
        (#"{"aps":{"event":"start","timestamp":"auto","content-state":{},"attributes-type":"Match","attributes":{},"alert":"Kick-off","input-push-channel":"{{channel}}"}}"#, .liveactivity, 10),
        (#"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"Match","attributes":{},"alert":"Kick-off","input-push-channel":"dHJhY2sgNDI="}}"#, .liveactivity, 10),
        (#"{"aps":{"event":"end","timestamp":"auto","content-state":{"score":"{{score}}"},"dismissal-date":"{{gone:int}}","stale-date":1}}"#, .liveactivity, 10),
        (#"{"aps":{"alert":"a","relevance-score":0.75,"interruption-level":"critical","sound":{"critical":1,"name":"default","volume":1}}}"#, .alert, 10),
        (#"{"aps":{"alert":{"title-loc-key":"T","title-loc-args":["{{a}}"],"subtitle":"s","subtitle-loc-key":null,"subtitle-loc-args":null,"launch-image":"x.png"},"target-content-id":"c","filter-criteria":"work"}}"#, .alert, 10),
        (#"{"aps":{"alert":"Ring"},"caller":"{{name}}"}"#, .voip, 10),
    ])
    func accepts(template: String, type: PushType, priority: Int) {
        #expect(Fixture.templateError(Fixture.push(template, type: type, priority: priority)) == nil, "template \(template)")
    }

    @Test func typedValuesAreRangeCheckedPerRow() throws {
        let template = #"{"aps":{"alert":"a","relevance-score":"{{score:number}}","sound":{"critical":1,"name":"x","volume":"{{vol:number|1}}"},"badge":"{{n:int|0}}"}}"#
        let renderer = try PayloadRenderer(push: Fixture.push(template))
        let ok = renderer.render(Fixture.strings(["score": "0.5", "vol": "0", "n": "3"]), locale: nil)
        #expect(Fixture.text(ok) == #"{"aps":{"alert":"a","relevance-score":0.5,"sound":{"critical":1,"name":"x","volume":0},"badge":3}}"#)
        #expect(Fixture.text(renderer.render(Fixture.strings(["score": "1.5"]), locale: nil))
                == #"failure(bad_field_value, score, score is "1.5", not a number from 0 to 1 (used in aps.relevance-score))"#)
        #expect(Fixture.text(renderer.render(Fixture.record(["score": .number("1"), "vol": .number("-0.1")]), locale: nil))
                == #"failure(bad_field_value, vol, vol is "-0.1", not a number from 0 to 1 (used in aps.sound.volume))"#)
        #expect(Fixture.text(renderer.render(Fixture.record(["score": .number("1"), "n": .number("-3")]), locale: nil))
                == #"failure(bad_field_value, n, n is "-3", not a non-negative int (used in aps.badge))"#)
        // Live Activities take any relevance score.
        let live = try PayloadRenderer(push: Fixture.push(#"{"aps":{"event":"end","timestamp":1,"content-state":{},"relevance-score":"{{score:number}}"}}"#, type: .liveactivity))
        #expect(Fixture.text(live.render(Fixture.strings(["score": "75"]), locale: nil)) == #"{"aps":{"event":"end","timestamp":1,"content-state":{},"relevance-score":75}}"#)
    }

    /// `timestamp: auto` is the UNIX time (seconds) of rendering, as a JSON number.
    @Test func anAutoTimestampIsTheTimeOfRendering() throws {
        let live = try PayloadRenderer(push: Fixture.push(#"{"aps":{"event":"update","timestamp":"auto","content-state":{"s":"{{s}}"}}}"#, type: .liveactivity))
        let before = Int(Date().timeIntervalSince1970)
        let bytes = try #require(Fixture.bytes(live.render(Fixture.strings(["s": "2–1"]), locale: nil)))
        let after = Int(Date().timeIntervalSince1970)
        let aps = try #require((Fixture.foundationObject(bytes) as? [String: Any])?["aps"] as? [String: Any])
        let stamp = try #require(aps["timestamp"] as? Int)
        #expect(stamp >= before && stamp <= after)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"aps":{"event":"update","timestamp":\#(stamp),"content-state":{"s":"2–1"}}}"#)
    }

    /// YAML reads `+1`, `.5` and `1_000` as numbers; JSON does not allow them as written.
    @Test func numberLiteralsAreWrittenAsJSONNumbers() throws {
        let template = JSONValue.object([
            .init("aps", .object([.init("alert", .string("a")), .init("badge", .number("+5"))])),
            .init("a", .number(".5")), .init("b", .number("1_000")), .init("c", .number("-2.50e1")),
        ])
        let renderer = try PayloadRenderer(push: PushSpec(type: .alert, priority: 10, template: template))
        let bytes = try #require(Fixture.bytes(renderer.render(Fixture.record([:]), locale: nil)))
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"aps":{"alert":"a","badge":5},"a":0.5,"b":1000,"c":-2.50e1}"#)
        #expect(Fixture.foundationObject(bytes) != nil)
        let bad = JSONValue.object([.init("aps", .object([.init("alert", .string("a"))])), .init("x", .number("nan"))])
        #expect(Fixture.templateError(PushSpec(type: .alert, priority: 10, template: bad)) == "push.template: x must be a JSON number, not nan")
    }

    @Test func voipAllowsFiveKilobytes() throws {
        let template = #"{"aps":{"alert":"Call"},"blob":"{{blob}}"}"#
        let voip = try PayloadRenderer(push: Fixture.push(template, type: .voip))
        let fits = try #require(Fixture.bytes(voip.render(Fixture.strings(["blob": String(repeating: "v", count: 5120 - 34)]), locale: nil)))
        #expect(fits.count == 5120)
        #expect(Fixture.text(voip.render(Fixture.strings(["blob": String(repeating: "v", count: 5121 - 34)]), locale: nil))
                == "failure(payload_too_large, , payload is 5121 bytes; the limit is 5120)")
        let alert = try PayloadRenderer(push: Fixture.push(template))
        #expect(Fixture.text(alert.render(Fixture.strings(["blob": String(repeating: "v", count: 4097 - 34)]), locale: nil))
                == "failure(payload_too_large, , payload is 4097 bytes; the limit is 4096)")
    }

    /// A broadcast (`push.broadcast`): Apple's 5 KB, and an update or an end, never a start.
    @Test func aBroadcastTakesFiveKilobytesAndCannotStartAnActivity() throws {
        // The blob beside the content state: that alone has the device's 4 KB (the next test).
        var push = Fixture.push(#"{"aps":{"event":"update","timestamp":1,"content-state":{}},"blob":"{{blob}}"}"#, type: .liveactivity)
        push.broadcast = BroadcastSpec()
        let broadcast = try PayloadRenderer(push: push)
        let overhead = #"{"aps":{"event":"update","timestamp":1,"content-state":{}},"blob":""}"#.utf8.count
        let fits = try #require(Fixture.bytes(broadcast.render(Fixture.strings(["blob": String(repeating: "v", count: 5120 - overhead)]), locale: nil)))
        #expect(fits.count == 5120)
        #expect(Fixture.text(broadcast.render(Fixture.strings(["blob": String(repeating: "v", count: 5121 - overhead)]), locale: nil))
                == "failure(payload_too_large, , payload is 5121 bytes; the limit is 5120)")
        push.broadcast = nil
        #expect(try PayloadRenderer(push: push).limit == 4096, "a Live Activity push to a device keeps 4 KB")

        var start = Fixture.push(#"{"aps":{"event":"start","timestamp":1,"attributes-type":"Score","attributes":{},"content-state":{},"alert":{"title":"t"}}}"#,
                                 type: .liveactivity)
        #expect(Fixture.templateError(start) == nil)
        start.broadcast = BroadcastSpec()
        #expect(Fixture.templateError(start)?.contains("a broadcast updates or ends the activities subscribed to its channel; it cannot start one") == true)
    }

    /// The device's limit on a Live Activity's content state (4 KB), whatever APNs' payload limit.
    @Test func aLiveActivityContentStateOverFourKilobytesIsRefused() throws {
        var push = Fixture.push(#"{"aps":{"event":"update","timestamp":1,"content-state":{"blob":"{{blob}}","n":[1,{"k":"}"}]}},"x":{"content-state":"{{other}}"}}"#,
                                type: .liveactivity)
        push.broadcast = BroadcastSpec()
        let renderer = try PayloadRenderer(push: push)
        let around = #"{"blob":"","n":[1,{"k":"}"}]}"#.utf8.count
        let fits = renderer.render(Fixture.strings(["blob": String(repeating: "v", count: 4096 - around), "other": String(repeating: "o", count: 600)]),
                                   locale: nil)
        #expect(Fixture.bytes(fits) != nil, "exactly 4096 bytes of content state; a content-state key outside aps does not count")
        #expect(Fixture.text(renderer.render(Fixture.strings(["blob": String(repeating: "v", count: 4097 - around), "other": "o"]), locale: nil))
                .contains("payload_too_large, , aps.content-state is 4097 bytes; a Live Activity's content state can't exceed 4096"))
        #expect(ContentStateSize.bytes(Array(#"{"aps":{"alert":"a"}}"#.utf8)) == nil)
        #expect(ContentStateSize.bytes(Array(#"{"aps":{"event":"end","content-state":"a\"b","timestamp":1}}"#.utf8)) == 6)
    }

    @Test func renderingIntoAReusedBufferMatches() throws {
        let renderer = try PayloadRenderer(push: Fixture.push(#"{"aps":{"alert":"Hi {{name}}","badge":"{{n:int}}"}}"#))
        var buffer: [UInt8] = Array(repeating: 0x41, count: 500)
        for (name, n) in [("Ana", "1"), ("Zoë", "22"), ("李雷", "3")] {
            let record = Fixture.strings(["name": name, "n": n])
            #expect(renderer.render(record, locale: nil, into: &buffer) == .payload)
            #expect(Fixture.bytes(renderer.render(record, locale: nil)) == buffer)
        }
        #expect(renderer.render(Fixture.strings(["name": "x", "n": "-1"]), locale: nil, into: &buffer)
                == .failure(reason: .badFieldValue, field: "n", detail: #"n is "-1", not a non-negative int (used in aps.badge)"#))
    }

    @Test func prettyPrintKeepsOrderAndText() {
        let compact = Array(#"{"aps":{"alert":{"title":"a,b:{c}","body":"Zoë \"q\" 🎉"},"badge":1},"e":{},"l":[],"x":[1,{"y":null}]}"#.utf8)
        #expect(PrettyJSON.format(compact) == """
            {
              "aps": {
                "alert": {
                  "title": "a,b:{c}",
                  "body": "Zoë \\"q\\" 🎉"
                },
                "badge": 1
              },
              "e": {},
              "l": [],
              "x": [
                1,
                {
                  "y": null
                }
              ]
            }
            """)
    }
}
