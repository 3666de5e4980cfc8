import HeraldCore
import HeraldState
import HeraldTestSupport
import Testing

/// The sorter's order must be exactly `Array.sorted()`'s (key, then row), across spilled and merged
/// runs, whatever the keys look like: deduplication keeps the first row of each token by it.
@Suite struct ExternalSorterTests {
    enum Shape: String, CaseIterable {
        /// What real device tokens look like: uniformly spread keys.
        case random
        /// Every key with the same first 16 bits and few distinct second words.
        case sharedPrefix
        /// Few keys, each many times (duplicates by the thousand), and rows out of order.
        case fewKeysRepeated
        /// Hashed keys (other token lengths) mixed with exact ones that share their words.
        case hashedAndExact
    }

    /// Spread, repeatable words without a generator: i times odd 64-bit constants (Fibonacci hashing).
    func word(_ i: Int, _ salt: UInt64) -> UInt64 { (UInt64(i) &+ salt) &* 0x9E37_79B9_7F4A_7C15 ^ (UInt64(i) &* salt) }

    func entries(_ shape: Shape, count: Int) -> [TokenEntry] {
        (0..<count).map { i -> TokenEntry in
            let id = Int64(word(i, 0xBF58_476D_1CE4_E5B9) % 1_000_000)
            switch shape {
            case .random:
                return TokenEntry(key: exact(word(i, 1), word(i, 2)), id: id)
            case .sharedPrefix:
                return TokenEntry(key: exact(0xABCD_0000_0000_0000 | (word(i, 3) & 0xFFFF_FFFF_FFFF), word(i, 4) % 4), id: id)
            case .fewKeysRepeated:
                return TokenEntry(key: exact((word(i, 5) % 37) << 40, 0), id: id)
            case .hashedAndExact:
                let w0 = (word(i, 6) % 1000) << 50
                return i % 2 == 0 ? TokenEntry(key: TokenKey(high: w0, low: 7), id: id) : TokenEntry(key: exact(w0, 7), id: id)
            }
        }
    }

    /// An exact (32-byte token) key with the given first two words.
    func exact(_ w0: UInt64, _ w1: UInt64) -> TokenKey {
        var key = TokenKey(high: w0, low: w1)
        key.w2 = 0x5555_5555_5555_5555
        key.w3 = 0x5555_5555_5555_5555
        key.isExact = true
        return key
    }

    @Test(arguments: Shape.allCases)
    func sortsLikeTheStandardLibraryAcrossSpilledRuns(_ shape: Shape) throws {
        let dir = TemporaryDirectory("sorter")
        let input = entries(shape, count: 200_000)
        // Runs of 70,000, merged two at a time.
        let sorter = ExternalSorter(directory: dir.path, runCapacity: 70_000, fanIn: 2)
        for e in input { try sorter.insert(e) }
        var out: [TokenEntry] = []
        out.reserveCapacity(input.count)
        try sorter.forEach { out.append($0) }
        let expected = input.sorted()
        #expect(out.count == expected.count)
        // The first difference, not the arrays: printing 200,000 entries would take minutes.
        #expect(out.indices.first { out[$0] != expected[$0] } == nil)
    }

    @Test(arguments: [Shape.random, .fewKeysRepeated])
    func dropsEqualKeepsEachValueOnce(_ shape: Shape) throws {
        let input = entries(shape, count: 100_000).map { TokenEntry(key: $0.key, id: 0) }
        let dir = TemporaryDirectory("sorter")
        let sorter = ExternalSorter(directory: dir.path, runCapacity: 1 << 16, dropsEqual: true)
        for e in input { try sorter.insert(e) }
        var out: [TokenEntry] = []
        try sorter.forEach { out.append($0) }
        var expected: [TokenEntry] = []
        for e in input.sorted() where expected.last != e { expected.append(e) }
        #expect(out.count == expected.count)
        #expect(out.indices.first { out[$0] != expected[$0] } == nil)
    }
}
