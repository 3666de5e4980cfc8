import Crypto
import HeraldCore

/// Which arm of an experiment a recipient is in: a keyed hash of the campaign, the experiment's
/// seed and the normalized token, so the same token lands in the same arm on every resume, on
/// every shard, in `herald preview`, whatever the audience's order and whatever other tokens it
/// holds. Nothing else (no counter, no random state) takes part.
///
/// SHA-256 of "herald-experiment\0<campaign>\0<seed>\0<token hex>"; the digest's first 8 bytes,
/// as a fraction of 2^64, place the token among holdout, test and rollout; the next 8 bytes pick
/// the variant by weight. The two draws are independent, so the variants' shares within the test
/// do not depend on the holdout's or the test's size. The prefix is hashed once (`init`); each
/// token costs a copy of that state and one compression of its 64 hex digits.
public struct ExperimentAssigner: Sendable {
    public enum Arm: Hashable, Sendable {
        /// In the test (or, without `test_share`, in the campaign): the variant's index.
        case variant(Int)
        case holdout
        /// Neither: waits for the winner (`awaiting_winner`), or gets it when one is chosen.
        case rollout
    }

    private let prefix: SHA256
    /// Upper bounds on the first draw: below `holdoutBound` holdout, below `testBound` the test.
    private let holdoutBound: UInt64
    private let testBound: UInt64
    /// Cumulative weight bounds on the second draw, one per variant (the last is UInt64.max).
    private let variantBounds: [UInt64]

    public init(experiment: ExperimentSpec, campaign: String) {
        var h = SHA256()
        h.update(data: Array("herald-experiment\u{0}\(campaign)\u{0}\(experiment.seed)\u{0}".utf8))
        prefix = h
        holdoutBound = Self.bound(experiment.holdout)
        testBound = experiment.testShare.map { Self.bound(experiment.holdout + $0) } ?? .max
        let total = experiment.variants.reduce(0) { $0 + $1.weight }
        var running = 0
        variantBounds = experiment.variants.map { v in
            running += v.weight
            return running == total ? .max : Self.bound(Double(running) / Double(total))
        }
    }

    /// The share `p` (0...1) of 2^64 as a bound: a draw below it falls in the share.
    static func bound(_ p: Double) -> UInt64 {
        if p <= 0 { return 0 }
        if p >= 1 { return .max }
        return UInt64(p * 18_446_744_073_709_551_616.0)
    }

    public func arm(of token: DeviceToken) -> Arm {
        var h = prefix
        var hex = token.hex
        hex.withUTF8 { h.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        let (first, second) = h.finalize().withUnsafeBytes { d -> (UInt64, UInt64) in
            var a: UInt64 = 0, b: UInt64 = 0
            for i in 0..<8 { a = a << 8 | UInt64(d[i]); b = b << 8 | UInt64(d[8 + i]) }
            return (a, b)
        }
        if first < holdoutBound { return .holdout }
        if testBound != .max && first >= testBound { return .rollout }
        return .variant(variantBounds.firstIndex { second < $0 } ?? variantBounds.count - 1)
    }
}
