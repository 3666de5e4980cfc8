import HeraldCore
import Testing

@Suite struct DeviceTokenTests {
    let hex = "52738d8979ab4b64e4097545c922a10e0dd9a1cb4b27de72b9b0b2f131b82769"

    @Test func canonicalTokenIsKept() throws {
        #expect(try DeviceToken.normalize(hex).get().hex == hex)
    }

    @Test func exportSpellingsNormalizeToTheSameToken() throws {
        let spaced = "<" + stride(from: 0, to: 64, by: 8).map { i in
            String(hex[hex.index(hex.startIndex, offsetBy: i)..<hex.index(hex.startIndex, offsetBy: i + 8)])
        }.joined(separator: " ") + ">"
        for raw in [hex.uppercased(), spaced, "  \(hex)\t", "<\(hex.uppercased())>"] {
            #expect(try DeviceToken.normalize(raw).get().hex == hex, "\(raw)")
        }
    }

    @Test func invalidTokensSayWhy() {
        #expect(DeviceToken.normalize("") == .failure(.empty))
        #expect(DeviceToken.normalize("  <> ") == .failure(.empty))
        #expect(DeviceToken.normalize("abzz") == .failure(.notHex(position: 2)))
        #expect(DeviceToken.normalize(String(hex.dropLast())) == .failure(.oddLength(63)))
        #expect(DeviceToken.normalize("abcd") == .failure(.implausibleLength(bytes: 2)))
        #expect(DeviceToken.normalize(String(repeating: "ab", count: 257)) == .failure(.implausibleLength(bytes: 257)))
    }

    @Test func tokensOfOtherSizesAreAccepted() throws {
        // Apple: "Don't make assumptions about device token size."
        #expect(try DeviceToken.normalize(String(repeating: "0f", count: 100)).get().hex.count == 200)
    }

    @Test func logsShowOnlyAPrefix() throws {
        let t = try DeviceToken.normalize(hex).get()
        #expect(t.redacted == "52738d89…")
        #expect("\(t)" == "52738d89…")
    }
}
