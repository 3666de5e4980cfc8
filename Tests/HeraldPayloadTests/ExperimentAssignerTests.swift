import Crypto
import Foundation
import HeraldCore
@testable import HeraldPayload
import Testing

/// `ExperimentAssigner`: the arm of a token depends on the campaign, the seed and the token
/// alone, and the arms' shares hold on a large audience.
@Suite struct ExperimentAssignerTests {
    static func experiment(test: Double? = 0.20, holdout: Double = 0.05, weights: [Int] = [1, 1], seed: String = "") -> ExperimentSpec {
        ExperimentSpec(testShare: test, holdout: holdout,
                       variants: weights.enumerated().map { ExperimentSpec.Variant(name: "v\($0.offset)", weight: $0.element, template: .object([])) },
                       seed: seed)
    }

    /// Reproducible random tokens (SplitMix64), 32 bytes each.
    static func tokens(_ n: Int, seed: UInt64 = 0x5eed) -> [DeviceToken] {
        var state = seed
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return (0..<n).map { _ in
            let hex = (0..<4).map { _ in String(format: "%016llx", next()) }.joined()
            return try! DeviceToken.normalize(hex).get()
        }
    }

    /// The assignment computed from its definition (docs/experiments.md), independently of the type's shortcuts.
    static func reference(_ e: ExperimentSpec, campaign: String, token: DeviceToken) -> ExperimentAssigner.Arm {
        let key = Array(SHA256.hash(data: Array("herald-experiment\u{0}\(campaign)\u{0}\(e.seed)".utf8)))
        let k0 = key[0..<8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let k1 = key[8..<16].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let h = Array(token.hex.utf8).withUnsafeBytes { ExperimentAssigner.sipHash24(k0: k0, k1: k1, $0) }
        let two64 = 18_446_744_073_709_551_616.0
        let u = Double(h) / two64
        if u < e.holdout { return .holdout }
        let test = e.testShare ?? (1 - e.holdout)
        if e.testShare != nil, u >= e.holdout + test { return .rollout }
        let position = (u - e.holdout) / test
        let total = Double(e.variants.reduce(0) { $0 + $1.weight })
        var running = 0.0
        for (i, variant) in e.variants.enumerated() {
            running += Double(variant.weight)
            if position < running / total { return .variant(i) }
        }
        return .variant(e.variants.count - 1)
    }

    /// The SipHash paper's test vectors (Appendix A): key 00…0f, messages 00…0e and empty.
    @Test func sipHashMatchesThePapersVectors() {
        let key = Array(UInt8(0)..<16)
        let k0 = key[0..<8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let k1 = key[8..<16].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(Array(UInt8(0)..<15).withUnsafeBytes { ExperimentAssigner.sipHash24(k0: k0, k1: k1, $0) } == 0xa129_ca61_49be_45e5)
        #expect([UInt8]().withUnsafeBytes { ExperimentAssigner.sipHash24(k0: k0, k1: k1, $0) } == 0x726f_db47_dd0e_0e31)
    }

    @Test func theArmIsTheKeyedHashOfCampaignSeedAndToken() {
        let e = Self.experiment(weights: [1, 2, 3], seed: "s1")
        let assigner = ExperimentAssigner(experiment: e, campaign: "winter")
        for token in Self.tokens(5_000) {
            #expect(assigner.arm(of: token) == Self.reference(e, campaign: "winter", token: token))
        }
    }

    @Test func theSameTokenGetsTheSameArmWhateverTheOrderAndTheOtherTokens() {
        let e = Self.experiment()
        let tokens = Self.tokens(2_000)
        let first = ExperimentAssigner(experiment: e, campaign: "c")
        let arms = Dictionary(uniqueKeysWithValues: tokens.map { ($0, first.arm(of: $0)) })
        // Another assigner (another run or shard), the tokens reversed and mixed with others.
        let second = ExperimentAssigner(experiment: e, campaign: "c")
        for token in (tokens.reversed() + Self.tokens(500, seed: 99)).shuffled() where arms[token] != nil {
            #expect(second.arm(of: token) == arms[token])
        }
        // Every shard of a sharded run computes the arm from the token alone: split the tokens
        // four ways and each part still agrees.
        for k in 0..<4 {
            let shard = ExperimentAssigner(experiment: e, campaign: "c")
            for token in tokens.enumerated().filter({ $0.offset % 4 == k }).map(\.element) {
                #expect(shard.arm(of: token) == arms[token])
            }
        }
    }

    @Test func theCampaignAndTheSeedChangeTheSplit() {
        let tokens = Self.tokens(2_000)
        let base = ExperimentAssigner(experiment: Self.experiment(), campaign: "c")
        let otherCampaign = ExperimentAssigner(experiment: Self.experiment(), campaign: "d")
        let otherSeed = ExperimentAssigner(experiment: Self.experiment(seed: "again"), campaign: "c")
        let sameCampaign = tokens.filter { base.arm(of: $0) == otherCampaign.arm(of: $0) }.count
        let sameSeed = tokens.filter { base.arm(of: $0) == otherSeed.arm(of: $0) }.count
        // Independent splits agree on about 0.05² + 0.1² + 0.1² + 0.75² ≈ 58 % of tokens; the same split on all.
        #expect(sameCampaign < 1_400 && sameCampaign > 900)
        #expect(sameSeed < 1_400 && sameSeed > 900)
    }

    /// 1,000,000 random tokens: every arm's share within 0.25 percentage points of its target.
    /// Each count is binomial: the largest standard deviation here (the rollout's, p = 0.75) is
    /// 0.043 points, so the bound is almost six of them.
    @Test func sharesHoldOnAMillionTokens() {
        let e = Self.experiment(test: 0.20, holdout: 0.05, weights: [1, 3])
        let assigner = ExperimentAssigner(experiment: e, campaign: "accuracy")
        var counts: [ExperimentAssigner.Arm: Int] = [:]
        let n = 1_000_000
        for token in Self.tokens(n, seed: 2026) { counts[assigner.arm(of: token), default: 0] += 1 }
        func share(_ arm: ExperimentAssigner.Arm) -> Double { Double(counts[arm] ?? 0) / Double(n) }
        let bound = 0.0025
        #expect(abs(share(.holdout) - 0.05) < bound)
        #expect(abs(share(.variant(0)) - 0.20 * 0.25) < bound)
        #expect(abs(share(.variant(1)) - 0.20 * 0.75) < bound)
        #expect(abs(share(.rollout) - 0.75) < bound)
    }

    @Test func withoutATestShareEveryoneOutsideTheHoldoutGetsAVariantByWeight() {
        let e = Self.experiment(test: nil, holdout: 0.10, weights: [2, 1, 1])
        let assigner = ExperimentAssigner(experiment: e, campaign: "all")
        var counts: [ExperimentAssigner.Arm: Int] = [:]
        let n = 200_000
        for token in Self.tokens(n, seed: 7) { counts[assigner.arm(of: token), default: 0] += 1 }
        #expect(counts[.rollout] == nil)
        let bound = 0.006
        #expect(abs(Double(counts[.holdout] ?? 0) / Double(n) - 0.10) < bound)
        #expect(abs(Double(counts[.variant(0)] ?? 0) / Double(n) - 0.45) < bound)
        #expect(abs(Double(counts[.variant(1)] ?? 0) / Double(n) - 0.225) < bound)
        #expect(abs(Double(counts[.variant(2)] ?? 0) / Double(n) - 0.225) < bound)
    }

    @Test func sharesAtTheEdges() {
        let tokens = Self.tokens(20_000)
        // No holdout: nobody is held out. A test share that fills the rest: nobody waits.
        let full = ExperimentAssigner(experiment: Self.experiment(test: 0.95, holdout: 0.05), campaign: "e")
        #expect(!tokens.contains { full.arm(of: $0) == .rollout })
        let none = ExperimentAssigner(experiment: Self.experiment(test: 0.5, holdout: 0), campaign: "e")
        #expect(!tokens.contains { none.arm(of: $0) == .holdout })
        // One variant: every test recipient gets it.
        let one = ExperimentAssigner(experiment: Self.experiment(weights: [5]), campaign: "e")
        #expect(tokens.allSatisfy { [.variant(0), .holdout, .rollout].contains(one.arm(of: $0)) })
        // A bigger holdout moves tokens only out of the test into the holdout: the first draw is
        // cut at other points, never reshuffled.
        let small = ExperimentAssigner(experiment: Self.experiment(test: 0.20, holdout: 0.05), campaign: "e")
        let large = ExperimentAssigner(experiment: Self.experiment(test: 0.15, holdout: 0.10), campaign: "e")
        for token in tokens where small.arm(of: token) == .holdout { #expect(large.arm(of: token) == .holdout) }
        for token in tokens where small.arm(of: token) == .rollout { #expect(large.arm(of: token) == .rollout) }
    }
}

