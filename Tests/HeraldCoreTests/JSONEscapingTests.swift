import Foundation
import HeraldCore
import Testing

/// JSON string escaping writes runs of plain bytes whole and escapes what RFC 8259 requires;
/// every report line, log line and payload goes through it.
@Suite struct JSONEscapingTests {
    func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        JSONEscaping.appendQuoted(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    @Test func escapesWhatJSONRequiresAndNothingElse() {
        #expect(quoted("") == #""""#)
        #expect(quoted("x") == #""x""#)
        #expect(quoted("plain text, déjà vu 🚀") == #""plain text, déjà vu 🚀""#)
        #expect(quoted(#""a" \ b"#) == #""\"a\" \\ b""#)
        #expect(quoted("line\nfeed\rtab\t") == #""line\nfeed\rtab\t""#)
        #expect(quoted("\u{0}\u{1F}x\u{7F}") == #""\u0000\u001fx"# + "\u{7F}\"", "DEL is not a control character in JSON")
        #expect(quoted("\\") == #""\\""#, "an escape as the whole string")
        #expect(quoted("\"\"") == #""\"\"""#, "escapes back to back")
    }

    /// Every control character, quote and backslash, at the start, middle and end of plain runs:
    /// the JSON parser gives back exactly the original string.
    @Test func roundTripsThroughAJSONParser() throws {
        var specials = (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }
        specials += ["\"", "\\", "é", "€", "😀"]
        for special in specials {
            for s in [special, "ab" + special, special + "c", special + "cd", "ab" + special + "cd" + special + special + "ef"] {
                let text = "[" + quoted(s) + "]"
                let parsed = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String]
                #expect(parsed == [s], "\(text.debugDescription)")
            }
        }
    }
}
