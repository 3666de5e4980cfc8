import Foundation
import HeraldCore

/// The standard behaviour: Apple's validation (`RequestValidator`), then for a request that
/// passes it, the seeded random faults, then the deterministic token rules. A valid request that
/// none of them claims is answered 200.
///
/// Random faults come before token rules because a server in trouble fails whatever the token:
/// a dead token may get a 503 first and its 410 on the retry, as at Apple.
public struct APNsBehavior: SimulatorBehavior {
    public let validator: RequestValidator
    let tokenRules: TokenRuleBook
    let faults: StatusFaults?
    let broadcasts: BroadcastValidator

    /// `channels`: the broadcast channels the management port keeps (shared with it).
    public init(configuration: SimulatorConfiguration, channels: ChannelRegistry = ChannelRegistry()) throws(SimulatorError) {
        try configuration.validate()
        validator = try RequestValidator(configuration: configuration)
        tokenRules = TokenRuleBook(configuration.tokenRules)
        faults = configuration.faults.injectsStatuses ? StatusFaults(configuration.faults) : nil
        broadcasts = BroadcastValidator(validator: validator, channels: channels, adoptsUnknownChannels: configuration.adoptsUnknownChannels)
    }

    public func respond(to request: SimulatorRequest, on connection: SimulatorConnection, now: Date) -> SimulatorVerdict {
        if BroadcastValidator.isBroadcast(request.path) {
            // A broadcast meets the same random faults as a device push, keyed by its channel.
            let verdict = broadcasts.validate(request, on: connection, now: now)
            guard verdict.status == 200, let faults, let fault = faults.decide(token: request.header("apns-channel-id") ?? "") else { return verdict }
            return verdict.replaced(by: fault.reason, fault: fault.name)
        }
        let verdict = validator.validate(request, on: connection, now: now)
        guard verdict.status == 200, let token = verdict.token?.lowercased() else { return verdict }
        if let faults, let fault = faults.decide(token: token) { return verdict.replaced(by: fault.reason, fault: fault.name) }
        return tokenRules.answer(verdict, token: token, now: now)
    }
}

/// `SimulatorTokenRules` at work: prefix matching plus the failures each flaky token has served.
final class TokenRuleBook: Sendable {
    private let rules: SimulatorTokenRules
    /// Failures served per flaky token. Grows only with tokens matching a flaky prefix.
    private let served = Locked<[String: Int]>([:])

    init(_ rules: SimulatorTokenRules) {
        var lowered = rules
        lowered.unregisteredPrefixes = rules.unregisteredPrefixes.map { $0.lowercased() }
        lowered.expiredTokenPrefixes = rules.expiredTokenPrefixes.map { $0.lowercased() }
        lowered.badTokenPrefixes = rules.badTokenPrefixes.map { $0.lowercased() }
        lowered.notForTopicPrefixes = rules.notForTopicPrefixes.map { $0.lowercased() }
        lowered.answers = rules.answers.map { FixedAnswerRule(prefix: $0.prefix.lowercased(), reason: $0.reason) }
        lowered.flaky = rules.flaky.map { FlakyTokenRule(prefix: $0.prefix.lowercased(), failures: $0.failures, status: $0.status) }
        self.rules = lowered
    }

    /// `accepted` itself, or the answer the first matching rule gives (`token` is lowercase).
    func answer(_ accepted: SimulatorVerdict, token: String, now: Date) -> SimulatorVerdict {
        if rules.isEmpty { return accepted }
        let milliseconds = Int(now.timeIntervalSince1970 * 1000)
        func matches(_ prefixes: [String]) -> Bool { prefixes.contains { token.hasPrefix($0) } }
        if let rule = rules.answers.first(where: { token.hasPrefix($0.prefix) }) {
            return accepted.replaced(by: rule.reason, timestamp: rule.reason.entry?.status == 410 ? milliseconds : nil, fault: "answer")
        }
        if matches(rules.unregisteredPrefixes) { return accepted.replaced(by: "Unregistered", timestamp: milliseconds) }
        if matches(rules.expiredTokenPrefixes) { return accepted.replaced(by: "ExpiredToken", timestamp: milliseconds) }
        if matches(rules.badTokenPrefixes) { return accepted.replaced(by: "BadDeviceToken") }
        if matches(rules.notForTopicPrefixes) { return accepted.replaced(by: "DeviceTokenNotForTopic") }
        if let rule = rules.flaky.first(where: { token.hasPrefix($0.prefix) }) {
            let failing = served.withLock { served in
                let n = served[token, default: 0]
                guard n < rule.failures else { return false }
                served[token] = n + 1
                return true
            }
            if failing, let reason = FlakyTokenRule.reasons[rule.status] {
                return accepted.replaced(by: APNsReason(reason), fault: "flaky")
            }
        }
        return accepted
    }
}

/// Seeded 429/500/503 answers. The k-th fault roll of a token is a pure function of the seed,
/// the token and k (`FaultDice`), so the outcome does not depend on which connection or stream
/// carried the request, nor on what other tokens did meanwhile. k counts the faults the token
/// has had in a row: it is kept only while a token keeps failing, so memory stays small.
final class StatusFaults: Sendable {
    private let faults: SimulatorFaults
    private let streak = Locked<[String: Int]>([:])

    init(_ faults: SimulatorFaults) { self.faults = faults }

    func decide(token: String) -> (reason: APNsReason, name: String)? {
        streak.withLock { streak in
            let k = streak[token, default: 0]
            let roll = FaultDice.unit(seed: faults.seed, key: token, index: UInt64(k))
            let fault: (reason: APNsReason, name: String)?
            if roll < faults.p429 {
                fault = ("TooManyRequests", "p429")
            } else if roll < faults.p429 + faults.p500 {
                fault = ("InternalServerError", "p500")
            } else if roll < faults.p429 + faults.p500 + faults.p503 {
                fault = ("ServiceUnavailable", "p503")
            } else {
                fault = nil
            }
            if fault != nil { streak[token] = k + 1 } else { streak.removeValue(forKey: token) }
            return fault
        }
    }
}

/// Seeded, order-independent random numbers: SplitMix64's finaliser over (seed, key, index).
enum FaultDice {
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// FNV-1a of the key's bytes, then mixed with seed and index.
    static func hash(seed: UInt64, key: String, index: UInt64) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in key.utf8 { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        return mix(mix(h ^ seed) ^ index)
    }

    /// Uniform in [0, 1).
    static func unit(seed: UInt64, key: String, index: UInt64) -> Double {
        Double(hash(seed: seed, key: key, index: index) >> 11) * 0x1.0p-53
    }
}
