import HeraldCore
import Testing

@Suite struct ValueTests {
    @Test func durations() {
        #expect(DurationText.seconds("90s") == 90)
        #expect(DurationText.seconds("15m") == 900)
        #expect(DurationText.seconds("24h") == 86_400)
        #expect(DurationText.seconds("7d") == 604_800)
        #expect(DurationText.seconds("3600") == 3600)
        for bad in ["", "h", "1.5h", "-1s", "1w", "1 h x"] { #expect(DurationText.seconds(bad) == nil, "\(bad)") }
    }

    @Test func jsonKeepsKeyOrderAndEscapesOnlyWhatItMust() {
        let v = JSONValue.object([.init("z", .string("a\"b\\c\n\u{0}é😀")), .init("a", .array([.number("1"), .bool(true), .null]))])
        #expect(v.compactText == #"{"z":"a\"b\\c\n\u0000é😀","a":[1,true,null]}"#)
    }

    @Test func pushTypeTopicSuffixes() {
        #expect(PushType.alert.topicSuffix == "")
        #expect(PushType.voip.topicSuffix == ".voip")
        #expect(PushType.liveactivity.topicSuffix == ".push-type.liveactivity")
        #expect(PushType.voip.payloadLimit == 5120)
        #expect(PushType.alert.payloadLimit == 4096)
    }
}
