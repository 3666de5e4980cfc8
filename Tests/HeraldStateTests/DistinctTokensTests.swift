import Foundation
import HeraldCore
import HeraldState
import Testing

@Suite struct DistinctTokensTests {
    func token(_ hex: String) -> DeviceToken { try! DeviceToken.normalize(hex).get() }

    /// More tokens than one batch, repeats inside a batch and across batches.
    @Test func countsEachTokenOnce() throws {
        let set = try DistinctTokens()
        for round in 0..<3 {
            for i in 0..<5_000 where round == 0 || i % 2 == 0 {
                try set.insert(token(String(format: "%064x", i)))
            }
        }
        #expect(try set.count() == 5_000)
        try set.insert(token(String(format: "%064x", 5_000)))
        try set.insert(token(String(format: "%064x", 5_000)))
        #expect(try set.count() == 5_001)
    }

    /// Tokens are compared whole: a token and a longer one it is the prefix of are two tokens,
    /// as are tokens differing only in their last byte.
    @Test func comparesWholeTokensOfAnyLength() throws {
        let set = try DistinctTokens()
        for hex in ["0011223344556677", "001122334455667788", "0011223344556678", "0011223344556677"] {
            try set.insert(token(hex))
        }
        #expect(try set.count() == 3)
    }

    @Test func anEmptySetCountsZero() throws {
        #expect(try DistinctTokens().count() == 0)
    }
}
