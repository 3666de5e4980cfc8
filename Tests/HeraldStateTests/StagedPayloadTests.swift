import Foundation
@testable import HeraldState
import HeraldTestSupport
import Testing

/// The staged payload encoding: whatever `encode` accepts, `decode` gives back byte for byte;
/// what it cannot shrink it refuses; malformed encodings are refused, never half-decoded.
@Suite struct StagedPayloadTests {
    func rendered(_ name: String, _ unread: Int, _ user: String) -> [UInt8] {
        Array(("{\"aps\":{\"alert\":{\"title\":\"Your weekly summary is ready\",\"body\":\"Hi \(name), you have \(unread) unread "
            + "messages. Tap to see what you missed.\"},\"badge\":\(unread),\"sound\":\"default\",\"thread-id\":\"weekly-digest\","
            + "\"mutable-content\":1},\"campaign_id\":\"cmp_2026_11_21_weekly\",\"user_id\":\"\(user)\",\"deeplink\":\"myapp://inbox?src=push\"}").utf8)
    }

    var scratch: [UInt8] = []

    func decode(_ encoded: [UInt8], _ reference: PayloadReference) -> [UInt8]? {
        encoded.withUnsafeBytes { PayloadReference.decode($0, reference: reference.bytes) }
    }

    @Test mutating func aPayloadFromTheSameTemplateKeepsOnlyWhatDiffers() {
        let reference = PayloadReference(id: 1, bytes: rendered("Alice", 3, "u-000001"))
        for (name, unread, user) in [("Bob", 12, "u-483920"), ("Émilie-Françoise", 0, ""), ("A", 123_456, "user-with-a-much-longer-id-0001")] {
            let payload = rendered(name, unread, user)
            var out: [UInt8] = []
            #expect(reference.encode(payload, into: &out, scratch: &scratch))
            #expect(decode(out, reference) == payload)
            #expect(out.count < 60 + name.utf8.count + user.utf8.count, "\(out.count) bytes for a \(payload.count)-byte payload")
        }
        var same: [UInt8] = []
        #expect(reference.encode(reference.bytes, into: &same, scratch: &scratch))
        #expect(same.count <= 5 && decode(same, reference) == reference.bytes)
    }

    @Test mutating func whatCannotBeShrunkIsRefusedAndTheBufferLeftAsItWas() {
        var generator = SystemRandomNumberGenerator()
        let reference = PayloadReference(id: 1, bytes: rendered("Alice", 3, "u-1"))
        let unrelated = (0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var out: [UInt8] = [7, 7, 7]
        #expect(!reference.encode(unrelated, into: &out, scratch: &scratch))
        #expect(!reference.encode([], into: &out, scratch: &scratch))
        #expect(!reference.encode(Array("{}".utf8), into: &out, scratch: &scratch))
        #expect(out == [7, 7, 7])
        let tiny = PayloadReference(id: 2, bytes: Array("{}".utf8))
        #expect(!tiny.encode(rendered("Bob", 1, "u-2"), into: &out, scratch: &scratch))
        #expect(out == [7, 7, 7])
    }

    /// Payloads made from the reference by random edits (bytes replaced, inserted, removed, runs
    /// moved and repeated), appended after other bytes as the staged row's buffer holds them.
    @Test mutating func everyAcceptedEncodingDecodesToThePayload() {
        var rng = SplitMix64(seed: 0x5eed)
        let reference = PayloadReference(id: 1, bytes: rendered("Alice", 3, "u-000001"))
        var accepted = 0
        for _ in 0..<5_000 {
            var payload = reference.bytes
            for _ in 0..<Int.random(in: 0...12, using: &rng) {
                let at = Int.random(in: 0...payload.count, using: &rng)
                let length = Int.random(in: 0...min(40, payload.count - at), using: &rng)
                switch Int.random(in: 0...3, using: &rng) {
                case 0: payload.replaceSubrange(at..<at + length, with: (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) })
                case 1: payload.insert(contentsOf: (0..<Int.random(in: 1...30, using: &rng)).map { _ in UInt8.random(in: 32...126, using: &rng) }, at: at)
                case 2: payload.removeSubrange(at..<at + length)
                default:
                    let from = Int.random(in: 0..<reference.bytes.count, using: &rng)
                    let run = reference.bytes[from..<min(reference.bytes.count, from + Int.random(in: 1...80, using: &rng))]
                    payload.insert(contentsOf: run, at: at)
                }
            }
            let prefix = (0..<Int.random(in: 0...70, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var out = prefix
            if reference.encode(payload, into: &out, scratch: &scratch) {
                accepted += 1
                #expect(Array(out.prefix(prefix.count)) == prefix)
                #expect(out.count - prefix.count < payload.count)
                #expect(decode(Array(out.dropFirst(prefix.count)), reference) == payload)
            } else {
                #expect(out == prefix)
            }
        }
        #expect(accepted > 4_000)
    }

    @Test func malformedEncodingsAreRefused() {
        let reference = PayloadReference(id: 1, bytes: Array("0123456789abcdef".utf8))
        // 10 bytes: a copy of 10 from offset 0.
        #expect(decode([10, 10 << 1 | 1, 0], reference) == Array("0123456789".utf8))
        #expect(decode([], reference) == nil, "no length")
        #expect(decode([0], reference) == [], "an empty payload")
        #expect(decode([11, 10 << 1 | 1, 0], reference) == nil, "shorter than its length")
        #expect(decode([9, 10 << 1 | 1, 0], reference) == nil, "longer than its length")
        #expect(decode([10, 10 << 1 | 1, 7], reference) == nil, "a copy past the reference's end")
        #expect(decode([10, 10 << 1 | 1], reference) == nil, "a copy without its offset")
        #expect(decode([4, 4 << 1, 65, 66], reference) == nil, "literal bytes cut short")
        #expect(decode([0x80, 0x80, 0x80, 0x80, 0x01], reference) == nil, "a varint too long")
        #expect(decode([3, 3 << 1, 65, 66, 67], reference) == Array("ABC".utf8))
    }
}
