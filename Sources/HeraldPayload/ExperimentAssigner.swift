import Crypto
import HeraldCore

/// Which arm of an experiment a recipient is in: a keyed hash of the normalized token, keyed by
/// the campaign and the experiment's seed, so the same token lands in the same arm on every
/// resume, on every shard, in `herald preview`, whatever the audience's order and whatever other
/// tokens it holds. Nothing else (no counter, no random state) takes part.
///
/// The hash is SipHash-2-4 (Aumasson and Bernstein, https://www.aumasson.jp/siphash/siphash.pdf),
/// a keyed hash made for short inputs, over the token's lower-case hex text; its 128-bit key is
/// the first 16 bytes of SHA-256("herald-experiment\0<campaign>\0<seed>"), worked out once per run.
/// Written here rather than taken from a library: swift-crypto has no SipHash, and SHA-256 of
/// each token (two block compressions and a heap-allocated state copy per token) cost more than
/// a tenth of a push (docs/benchmarks.md#instructions-per-push-two-variants).
///
/// The 64-bit hash, as a fraction u of 2^64, places the token: below `holdout` the holdout, below
/// `holdout + test_share` the test, else the rollout. Within the test, the token's place in the
/// test's stretch, (u − holdout) / test_share, picks the variant by cumulative weight: uniform and
/// independent of the stretch's size, so the variants' shares within the test do not depend on
/// the holdout's or the test's.
public struct ExperimentAssigner: Sendable {
    public enum Arm: Hashable, Sendable {
        /// In the test (or, without `test_share`, in the campaign): the variant's index.
        case variant(Int)
        case holdout
        /// Neither: waits for the winner (`awaiting_winner`), or gets it when one is chosen.
        case rollout
    }

    private let k0: UInt64
    private let k1: UInt64
    /// Upper bounds on the hash: below `holdoutBound` holdout, below `testBound` the test.
    private let holdoutBound: UInt64
    private let testBound: UInt64
    /// The test's stretch of the hash, as doubles: where it starts and how long it is.
    private let testLow: Double
    private let testWidth: Double
    /// Cumulative weight bounds on the token's place within the test (0..<1), one per variant (the last is 1).
    private let variantBounds: [Double]

    public init(experiment: ExperimentSpec, campaign: String) {
        let key = Array(SHA256.hash(data: Array("herald-experiment\u{0}\(campaign)\u{0}\(experiment.seed)".utf8)))
        k0 = Self.littleEndian(key, 0)
        k1 = Self.littleEndian(key, 8)
        holdoutBound = Self.bound(experiment.holdout)
        testBound = experiment.testShare.map { Self.bound(experiment.holdout + $0) } ?? .max
        testLow = Double(holdoutBound)
        testWidth = max(1, (testBound == .max ? 18_446_744_073_709_551_616.0 : Double(testBound)) - testLow)
        let total = experiment.variants.reduce(0) { $0 + $1.weight }
        var running = 0
        variantBounds = experiment.variants.map { v in
            running += v.weight
            return running == total ? 1 : Double(running) / Double(total)
        }
    }

    /// The share `p` (0...1) of 2^64 as a bound: a value below it falls in the share.
    static func bound(_ p: Double) -> UInt64 {
        if p <= 0 { return 0 }
        if p >= 1 { return .max }
        return UInt64(p * 18_446_744_073_709_551_616.0)
    }

    public func arm(of token: DeviceToken) -> Arm {
        var hex = token.hex
        let u = hex.withUTF8 { Self.sipHash24(k0: k0, k1: k1, UnsafeRawBufferPointer($0)) }
        if u < holdoutBound { return .holdout }
        if u >= testBound && testBound != .max { return .rollout }
        // The token's place within the test's stretch [holdout, holdout + test_share), 0..<1.
        let position = (Double(u) - testLow) / testWidth
        return .variant(variantBounds.firstIndex { position < $0 } ?? variantBounds.count - 1)
    }

    static func littleEndian(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in (0..<8).reversed() { v = v << 8 | UInt64(bytes[at + i]) }
        return v
    }

    /// SipHash-2-4 with 64-bit output, as the reference implementation computes it.
    static func sipHash24(k0: UInt64, k1: UInt64, _ m: UnsafeRawBufferPointer) -> UInt64 {
        var v0: UInt64 = 0x736f_6d65_7073_6575 ^ k0
        var v1: UInt64 = 0x646f_7261_6e64_6f6d ^ k1
        var v2: UInt64 = 0x6c79_6765_6e65_7261 ^ k0
        var v3: UInt64 = 0x7465_6462_7974_6573 ^ k1
        @inline(__always) func round() {
            v0 &+= v1; v1 = v1.rotatedLeft(13); v1 ^= v0; v0 = v0.rotatedLeft(32)
            v2 &+= v3; v3 = v3.rotatedLeft(16); v3 ^= v2
            v0 &+= v3; v3 = v3.rotatedLeft(21); v3 ^= v0
            v2 &+= v1; v1 = v1.rotatedLeft(17); v1 ^= v2; v2 = v2.rotatedLeft(32)
        }
        let whole = m.count & ~7
        var i = 0
        while i < whole {
            let word = m.loadUnaligned(fromByteOffset: i, as: UInt64.self).littleEndian
            v3 ^= word
            round(); round()
            v0 ^= word
            i += 8
        }
        var last = UInt64(truncatingIfNeeded: m.count) << 56
        for j in 0..<(m.count - whole) { last |= UInt64(m[whole + j]) << (8 * UInt64(j)) }
        v3 ^= last
        round(); round()
        v0 ^= last
        v2 ^= 0xff
        round(); round(); round(); round()
        return v0 ^ v1 ^ v2 ^ v3
    }
}

extension UInt64 {
    @inline(__always) func rotatedLeft(_ n: UInt64) -> UInt64 { (self << n) | (self >> (64 - n)) }
}
