import Foundation
import HeraldCore
import Testing

/// herald's own RFC 3339 UTC text, written and read without Foundation's ICU-backed formatter.
@Suite struct UTCTextTests {
    @Test func writesSecondsAndMillisecondsInUTC() {
        let d = Date(timeIntervalSince1970: 1_764_168_764.423)   // 2025-11-26T14:52:44.423Z
        #expect(UTCText.seconds(d) == "2025-11-26T14:52:44Z")
        #expect(UTCText.milliseconds(d) == "2025-11-26T14:52:44.423Z")
        #expect(UTCText.seconds(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        // Before the epoch the millisecond part still counts forward from its second.
        #expect(UTCText.milliseconds(Date(timeIntervalSince1970: -0.25)) == "1969-12-31T23:59:59.750Z")
    }

    @Test func readsWhatItWritesAndRFC3339Offsets() throws {
        let d = Date(timeIntervalSince1970: 1_764_168_764.423)
        let back = try #require(UTCText.parse(UTCText.milliseconds(d)))
        #expect(abs(back.timeIntervalSince(d)) < 0.000_001)
        #expect(UTCText.parse(UTCText.seconds(d)) == Date(timeIntervalSince1970: 1_764_168_764))
        #expect(UTCText.parse("2025-11-26T15:52:44+01:00") == Date(timeIntervalSince1970: 1_764_168_764))
        #expect(UTCText.parse("2025-11-26T09:22:44.5-05:30") == Date(timeIntervalSince1970: 1_764_168_764.5))
        #expect(UTCText.parse("2024-02-29T00:00:00z") == Date(timeIntervalSince1970: 1_709_164_800))
    }

    @Test(arguments: ["", "2025-11-26", "2025-11-26T14:52:44", "2025-11-26 14:52:44Z", "2025-02-30T00:00:00Z",
                      "2025-13-01T00:00:00Z", "2025-11-26T24:00:00Z", "2025-11-26T14:52:44.Z", "2025-11-26T14:52:44Zjunk",
                      "2025-11-26T14:52:44+0100", "２０２５-11-26T14:52:44Z"])
    func refusesAnythingElse(_ text: String) {
        #expect(UTCText.parse(text) == nil, "\(text)")
    }
}
