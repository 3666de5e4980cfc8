import Crypto
import Foundation
import HeraldCore
@testable import HeraldPayload
import Testing

/// `APNsIdGenerator` against a plain UUIDv5 computed here from RFC 4122 (SHA-1 of namespace +
/// name, version and variant bits set), for one generator reused across many tokens.
@Suite struct APNsIdGeneratorTests {
    static func reference(seed: String, token: String) -> String {
        var h = Insecure.SHA1()
        h.update(data: APNsIdGenerator.namespace + Array("\(seed)/\(token)".utf8))
        var b = Array(h.finalize().prefix(16))
        b[6] = (b[6] & 0x0F) | 0x50
        b[8] = (b[8] & 0x3F) | 0x80
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
            .uuidString.lowercased()
    }

    @Test func oneGeneratorGivesEveryTokenItsUUIDv5() throws {
        let generator = APNsIdGenerator(seed: "spring/3f1c")
        for i in 0..<200 {
            let hex = String(format: "%064x", i * 7_919)
            let token = try DeviceToken.normalize(hex).get()
            let id = generator.id(for: token)
            #expect(id == Self.reference(seed: "spring/3f1c", token: hex))
        }
    }

    @Test func theSeedChangesEveryId() throws {
        let token = try DeviceToken.normalize(String(repeating: "ab", count: 32)).get()
        let a = APNsIdGenerator(seed: "spring").id(for: token)
        let b = APNsIdGenerator(seed: "spring/run-2").id(for: token)
        #expect(a != b)
        #expect(a == Self.reference(seed: "spring", token: token.hex))
        #expect(a.count == 36 && a == a.lowercased() && Array(a)[14] == "5")
    }
}
