import HeraldCore
import HeraldState
import Testing

@Suite struct TokenKeyTests {
    func key(_ hex: String) -> TokenKey { TokenKey(try! DeviceToken.normalize(hex).get()) }

    /// A 32-byte token is its own key: equal keys are equal tokens, and deduplication trusts them.
    @Test func aThirtyTwoByteTokenIsItsOwnKey() {
        let hex = "00112233445566778899aabbccddeeff0123456789abcdeffedcba9876543210"
        let k = key(hex)
        #expect(k.isExact)
        #expect(k.w0 == 0x0011_2233_4455_6677 && k.w1 == 0x8899_aabb_ccdd_eeff && k.w2 == 0x0123_4567_89ab_cdef && k.w3 == 0xfedc_ba98_7654_3210)
        #expect(key(hex.uppercased()) == k, "keys are of the canonical token")
        var other = Array(hex)
        other[63] = "1"
        #expect(key(String(other)) != k)
    }

    /// Other lengths are hashed (equal keys only probably equal tokens), and a hashed key never
    /// equals an exact one, whatever its words.
    @Test func otherLengthsAreHashedAndNeverEqualAnExactKey() {
        let short = key("00112233445566778899aabbccddeeff")
        let long = key(String(repeating: "ab", count: 33))
        #expect(!short.isExact && !long.isExact)
        #expect(short == key("00112233445566778899AABBCCDDEEFF") && short != long)
        var exactTwin = key(String(repeating: "0", count: 64))
        (exactTwin.w0, exactTwin.w1, exactTwin.w2, exactTwin.w3) = (short.w0, short.w1, short.w2, short.w3)
        #expect(exactTwin != short && (exactTwin < short) != (short < exactTwin))
    }

    /// Only 64 lower-case hex digits make an exact key: any other byte among them hashes the text,
    /// so two different texts can never decode to the same words.
    @Test func sixtyFourBytesThatAreNotLowerCaseHexAreHashed() {
        for bad in ["g", "A", " ", "\u{0}", "\u{FF}"] {
            let text = Array(String(repeating: "0", count: 63).utf8) + Array(bad.utf8.prefix(1))
            let k = text.withUnsafeBytes { TokenKey(hex: $0) }
            #expect(!k.isExact, "last byte \(text.last!)")
        }
        let valid = Array(String(repeating: "0", count: 63).utf8) + Array("f".utf8)
        #expect(valid.withUnsafeBytes { TokenKey(hex: $0) }.w3 == 15)
    }
}
