import Foundation
import HeraldCore
@testable import HeraldReports
import HeraldState
import HeraldTestSupport
import Testing

/// The report rows' byte writer against the plain versions it replaced: the same bytes out.
@Suite struct RowBufferTests {
    /// A fixed sequence of byte strings that mix what must be escaped or quoted with what must
    /// not, at every offset of an 8-byte word and across word boundaries.
    static func samples() -> [[UInt8]] {
        let alphabet: [UInt8] = [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x22, 0x2C, 0x5C, 0x41, 0x7A, 0x7F, 0x80, 0xC3, 0xA9, 0xFF]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33)
        }
        var out: [[UInt8]] = [[]]
        for length in 0...40 {
            for _ in 0..<30 {
                // Mostly plain letters, so that a single special byte lands at varied offsets.
                var s: [UInt8] = []
                for _ in 0..<length {
                    let letter = UInt8(ascii: "a") + UInt8(next() % 26)
                    s.append(next() % 4 == 0 ? alphabet[next() % alphabet.count] : letter)
                }
                out.append(s)
            }
        }
        for special: UInt8 in [0x00, 0x0A, 0x0D, 0x1F, 0x22, 0x2C, 0x5C] {
            for at in 0..<17 {
                var s = [UInt8](repeating: UInt8(ascii: "x"), count: 17)
                s[at] = special
                out.append(s)
            }
        }
        return out
    }

    @Test func jsonEscapingWritesWhatJSONEscapingWrites() {
        var buffer = RowBuffer(capacity: 8)
        for s in Self.samples() {
            var expected: [UInt8] = []
            s.withUnsafeBufferPointer { JSONEscaping.appendEscaped(bytes: $0, to: &expected) }
            buffer.removeAll()
            s.withUnsafeBytes { b in
                buffer.reserve(6 * b.count)
                buffer.putJSONEscaped(b)
            }
            #expect(Array(buffer.bytes) == expected, "\(s)")
        }
    }

    @Test func csvQuotingIsAskedForExactlyTheFieldsWithACommaQuoteOrLineBreak() {
        var quoted = 0
        for s in Self.samples() {
            let special: Set<UInt8> = [0x2C, 0x22, 0x0A, 0x0D]
            let expected = s.contains { special.contains($0) }
            if expected { quoted += 1 }
            #expect(s.withUnsafeBytes { ByteScan.needsCSVQuotes($0) } == expected, "\(s)")
        }
        #expect(quoted > 100, "the samples exercise both answers")
    }

    @Test func decimalsAreWrittenAsSwiftPrintsThem() {
        var buffer = RowBuffer(capacity: 1)
        for n in [0, 7, 9, 10, 99, 100, 12_345, -1, -10, -987_654, Int.max, Int.min, Int.max / 10, 1_000_000_000_000_000_000] {
            buffer.removeAll()
            buffer.reserve(21)
            buffer.putDecimal(n)
            #expect(String(decoding: buffer.bytes, as: UTF8.self) == String(n))
        }
    }

    @Test func reservingMoreThanTheCapacityKeepsWhatWasWritten() {
        var buffer = RowBuffer(capacity: 4)
        var expected: [UInt8] = []
        for i in 0..<1000 {
            let b = UInt8(truncatingIfNeeded: i)
            buffer.reserve(1)
            buffer.put(b)
            expected.append(b)
        }
        buffer.append("tail ✓")
        expected += Array("tail ✓".utf8)
        #expect(Array(buffer.bytes) == expected)
    }

    @Test func storedStatusesAreReadFromTheirBytes() {
        for status in StoredStatus.allCases {
            #expect(Array(status.rawValue.utf8).withUnsafeBytes { StoredStatus(bytes: $0) } == status)
        }
        for text in ["", "sen", "sentt", "Sent", "tent", "suppresser", "pendinG", "retry "] {
            #expect(Array(text.utf8).withUnsafeBytes { StoredStatus(bytes: $0) } == nil, "\(text)")
        }
    }

    /// The reports are written from SQLite's bytes (`DeliveryColumns`); a merge writes them from
    /// rows read back (`DeliveryRow`). Both must give the same lines.
    @Test func rowsFromTheStateFileAndFromStringsAreWrittenAlike() throws {
        let dir = TemporaryDirectory("rowbuffer")
        let fx = try ReportFixture(dir)
        var fromColumns = RowBuffer(capacity: 16)
        var fromRows = RowBuffer(capacity: 16)
        try fx.state.forEachDeliveryColumns { c in
            DeliveryFormat.csv(c, to: &fromColumns); DeliveryFormat.ndjson(c, to: &fromColumns)
            DeliveryFormat.unregistered(c, to: &fromColumns); DeliveryFormat.rejected(c, to: &fromColumns)
        }
        try fx.state.forEachDelivery { r in
            DeliveryFormat.csv(r, to: &fromRows); DeliveryFormat.ndjson(r, to: &fromRows)
            DeliveryFormat.unregistered(r, to: &fromRows); DeliveryFormat.rejected(r, to: &fromRows)
        }
        let text = String(decoding: fromColumns.bytes, as: UTF8.self)
        #expect(text == String(decoding: fromRows.bytes, as: UTF8.self))
        #expect(text.contains("\"a, \"\"b\"\".csv\"") && text.contains("\"file\":\"a, \\\"b\\\".csv\""), "the fixture's file name needs quoting and escaping")
        #expect(text.contains(",pending,") && text.contains("\"invalidated_at\":null"))
    }
}
