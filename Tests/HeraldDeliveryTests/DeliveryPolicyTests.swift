import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldTestSupport
import Testing

/// The sender's pure policies with injected time and randomness.
struct DeliveryPolicyTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func backoffDoublesUpToItsCapWithJitterInHalfToFull() {
        let high = RetryBackoff(base: 1, cap: 300) { $0.upperBound }
        #expect((1...6).map { high.delay(attempt: $0) } == [1, 2, 4, 8, 16, 32])
        #expect(high.delay(attempt: 40) == 300, "capped, and no overflow for huge attempts")
        let low = RetryBackoff(base: 1, cap: 300) { $0.lowerBound }
        #expect(low.delay(attempt: 3) == 2)
        let real = RetryBackoff.recipient
        for attempt in 1...10 {
            let d = real.delay(attempt: attempt)
            let step = min(300, pow(2, Double(attempt - 1)))
            #expect(d >= step * 0.5 && d <= step)
        }
    }

    @Test func breakerOpensWhenMostOfAWindowFailsAndPausesLongerEachTime() {
        var b = CircuitBreaker(window: 10, threshold: 0.5, backoff: RetryBackoff(base: 1, cap: 60) { $0.upperBound })
        // 5 of 10 is not "most".
        for i in 0..<10 { #expect(b.record(failure: i % 2 == 0, now: Self.t0) == nil) }
        #expect(!b.isOpen(now: Self.t0))
        #expect(b.record(failure: true, now: Self.t0) == nil, "replaces a failure: still 5 of 10")
        #expect(b.record(failure: true, now: Self.t0) == Self.t0.addingTimeInterval(1), "6 of 10")
        #expect(b.isOpen(now: Self.t0.addingTimeInterval(0.5)) && !b.isOpen(now: Self.t0.addingTimeInterval(1)))
        // Still failing after the pause: a longer pause, and only after a fresh full window.
        for _ in 0..<9 { #expect(b.record(failure: true, now: Self.t0) == nil) }
        #expect(b.record(failure: true, now: Self.t0) == Self.t0.addingTimeInterval(2))
        // A healthy window resets the escalation.
        for _ in 0..<10 { _ = b.record(failure: false, now: Self.t0) }
        #expect(b.openings == 0)
        for _ in 0..<5 { #expect(b.record(failure: true, now: Self.t0) == nil) }
        #expect(b.record(failure: true, now: Self.t0) == Self.t0.addingTimeInterval(1), "back to the shortest pause")
    }

    @Test func concurrencyShrinksUnderPushbackAndGrowsBack() {
        var a = AdaptiveConcurrency(maximum: 100, sample: 100)
        #expect(a.limit == 100 && a.minimum == 10)
        var changes: [Int] = []
        func window(pushback: Int) {
            for i in 0..<100 { if let n = a.record(pushback: i < pushback) { changes.append(n) } }
        }
        window(pushback: 3)            // 3 %: between the thresholds, unchanged
        #expect(a.limit == 100 && changes.isEmpty)
        window(pushback: 20)
        #expect(a.limit == 70)
        window(pushback: 20); window(pushback: 20); window(pushback: 20); window(pushback: 20); window(pushback: 20); window(pushback: 20)
        #expect(a.limit == 10, "never below the minimum")
        window(pushback: 0)
        #expect(a.limit == 20, "additive increase")
        for _ in 0..<20 { window(pushback: 0) }
        #expect(a.limit == 100, "never above the job's streams")
        #expect(changes.first == 70)
    }

    @Test func environmentGuardTripsOnMostlyMismatchedFirstAnswers() {
        var g = EnvironmentGuard(sample: 200)
        for i in 0..<150 {
            #expect(g.record(status: 400, reason: i % 3 == 0 ? "DeviceTokenNotForTopic" : "BadDeviceToken") != .passed)
        }
        #expect(g.verdict == .tripped, "over half of the sample already mismatched: no need to wait for 200")
        #expect(g.message.contains("sandbox/production or topic mismatch?"))

        var ok = EnvironmentGuard(sample: 200)
        for i in 0..<200 { _ = ok.record(status: i < 60 ? 400 : 200, reason: i < 60 ? "BadDeviceToken" : nil) }
        #expect(ok.verdict == .passed)
        #expect(ok.record(status: 400, reason: "BadDeviceToken") == .passed, "decided once, for the run")

        var other = EnvironmentGuard(sample: 200)
        for _ in 0..<199 { _ = other.record(status: 410, reason: "Unregistered") }
        #expect(other.record(status: 410, reason: "Unregistered") == .passed, "dead tokens are not an environment mix-up")

        var small = EnvironmentGuard(sample: 200, minimumSample: 20)
        for _ in 0..<15 { _ = small.record(status: 400, reason: "BadDeviceToken") }
        #expect(small.finish() == .passed, "too few answers to call it")
        var smallBad = EnvironmentGuard(sample: 200, minimumSample: 20)
        for i in 0..<30 { _ = smallBad.record(status: 400, reason: i < 20 ? "BadDeviceToken" : "Unregistered") }
        #expect(smallBad.finish() == .tripped)
    }

    /// A broadcast's mix-up is ChannelNotRegistered, and a handful of channels is enough to call it.
    @Test func aBroadcastGuardHoldsChannelNotRegisteredAndDecidesOnFewChannels() {
        var g = EnvironmentGuard(broadcast: true)
        #expect(g.holds("ChannelNotRegistered") && !g.holds("BadDeviceToken"))
        #expect(!EnvironmentGuard().holds("ChannelNotRegistered") && EnvironmentGuard().holds("BadDeviceToken"))
        _ = g.record(status: 400, reason: "ChannelNotRegistered")
        _ = g.record(status: 400, reason: "ChannelNotRegistered")
        _ = g.record(status: 200, reason: nil)
        #expect(g.finish() == .tripped && g.message.hasPrefix("2 of the first 3 channels answered ChannelNotRegistered"))
        var deleted = EnvironmentGuard(broadcast: true)
        for i in 0..<25 { _ = deleted.record(status: i < 2 ? 400 : 200, reason: i < 2 ? "ChannelNotRegistered" : nil) }
        #expect(deleted.finish() == .passed, "two deleted channels of 25 fail on their own")
    }

    @Test func anExpiredTokenIsResignedOnceHoweverManyStreamsReportIt() throws {
        let key = TestKey()
        let token = try ProviderToken(privateKeyPEM: key.privateKeyPEM, source: "test", teamId: TestKey.teamId, keyId: TestKey.keyId)
        let first = try token.current()
        for _ in 0..<50 { token.invalidate(rejected: first) }
        let second = try token.current()
        #expect(token.signedCount == 2)
        token.invalidate(rejected: first)   // a late answer for the old token
        #expect(try token.current() == second && token.signedCount == 2)
    }

    @Test func concurrentCallersShareOneSignature() throws {
        let key = TestKey()
        let token = try ProviderToken(privateKeyPEM: key.privateKeyPEM, source: "test", teamId: TestKey.teamId, keyId: TestKey.keyId)
        DispatchQueue.concurrentPerform(iterations: 16) { _ in _ = try? token.current() }
        #expect(token.signedCount == 1)
    }
}
