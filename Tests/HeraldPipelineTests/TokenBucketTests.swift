import HeraldPipeline
import Testing

/// The token bucket on a fake clock: time is a number the test passes in, so nothing sleeps and
/// nothing depends on the machine's speed.
@Suite struct TokenBucketTests {
    @Test func aFullBucketLetsOneSecondOfPushesGoAtOnceThenMakesTheNextWait() {
        var b = TokenBucket(rate: 100, now: 0)
        #expect(b.reserve(100, now: 0) == 0, "the burst is one second deep")
        #expect(b.reserve(1, now: 0) == 0.01, "the next push waits for one token")
        #expect(abs(b.reserve(50, now: 0) - 0.51) < 1e-9, "and the debt accumulates")
    }

    @Test func tokensRefillAtTheRateUpToTheBurst() {
        var b = TokenBucket(rate: 10, now: 0)
        _ = b.reserve(10, now: 0)
        #expect(b.tokens(at: 0.5) == 5)
        #expect(b.reserve(5, now: 0.5) == 0)
        #expect(b.tokens(at: 0.5) == 0)
        #expect(b.tokens(at: 100) == 10, "an idle bucket saves at most one burst")
        #expect(b.reserve(11, now: 100) == 0.1)
    }

    @Test func aBatchLargerThanTheBurstWaitsForItsDebtAndKeepsTheLongRunRate() {
        var b = TokenBucket(rate: 200, now: 0)
        var t = 0.0
        var sent = 0
        // A sender that reserves 500 at a time and sleeps as told sends 200/s over a long run.
        while t < 60 {
            t += b.reserve(500, now: t)
            sent += 500
        }
        let rate = Double(sent - 200) / t   // the first second's burst came free
        #expect(abs(rate - 200) < 1, "\(rate)")
    }

    @Test func fractionalRatesSendOnePushEveryFewSeconds() {
        var b = TokenBucket(rate: 0.5, now: 0)
        #expect(b.burst == 1, "a rate below 1/s still holds one push")
        #expect(b.reserve(1, now: 0) == 0)
        #expect(b.reserve(1, now: 0) == 2)
        #expect(b.reserve(1, now: 2) == 2, "the second push went at 2 s; the third waits until 4 s")
        #expect(b.wait(for: 1, now: 6) == 0, "the third left at 4 s: room again at 6 s")
        var slow = TokenBucket(rate: 2.5, now: 0)
        #expect(slow.burst == 2.5)
        #expect(slow.reserve(2, now: 0) == 0)
        #expect(slow.reserve(1, now: 0) == 0.2)
    }

    @Test func rateZeroIsUnlimited() {
        var b = TokenBucket(rate: 0, now: 0)
        #expect(b.isUnlimited)
        #expect(b.reserve(1_000_000, now: 0) == 0)
        #expect(b.affordable(now: 0, by: 0) == Int.max)
        #expect(b.wait(for: 5, now: 0) == 0)
    }

    @Test func affordableCountsWhatCanLeaveBeforeATime() {
        var b = TokenBucket(rate: 10, now: 0)
        #expect(b.affordable(now: 0, by: 0) == 10)
        #expect(b.affordable(now: 0, by: 2.55) == 35)
        _ = b.reserve(30, now: 0)
        #expect(b.affordable(now: 0, by: 1) == 0, "20 tokens of debt: none before 2 s")
        #expect(b.affordable(now: 0, by: 3) == 10)
        #expect(b.wait(for: 1, now: 0) == 2.1)
    }

    @Test func waitDoesNotTakeTokens() {
        var b = TokenBucket(rate: 10, now: 0)
        #expect(b.wait(for: 20, now: 0) == 1)
        #expect(b.wait(for: 20, now: 0) == 1)
        #expect(b.reserve(20, now: 0) == 1)
    }

    @Test func aClockThatGoesBackAddsNoTokens() {
        var b = TokenBucket(rate: 10, now: 5)
        _ = b.reserve(10, now: 5)
        #expect(b.tokens(at: 4) == 0)
        #expect(b.reserve(1, now: 4) == 0.1)
    }
}
