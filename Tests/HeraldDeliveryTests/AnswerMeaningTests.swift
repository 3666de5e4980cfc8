import HeraldCore
import HeraldDelivery
import Testing

/// `AnswerMeaning`, the one place that decides what an APNs answer means.
@Suite struct AnswerMeaningTests {
    static func answer(_ status: Int, _ reason: String? = nil) -> PushOutcome {
        .answered(status: status, apnsId: nil, reason: reason.map { APNsReason($0) }, timestamp: nil)
    }

    @Test func eachAnswerMeansWhatApplesTableSays() {
        #expect(Self.answer(200).meaning == .delivered)
        #expect(Self.answer(410, "Unregistered").meaning == .rejected)
        #expect(Self.answer(400, "BadDeviceToken").meaning == .rejected)
        #expect(Self.answer(400, "SomethingAppleAddsLater").meaning == .rejected, "an undocumented reason is never resent")
        #expect(Self.answer(403, "InvalidProviderToken").meaning == .abortCampaign)
        #expect(Self.answer(400, "BadTopic").meaning == .abortCampaign)
        #expect(Self.answer(403, "ExpiredProviderToken").meaning == .refreshTokenAndRetry)
        #expect(Self.answer(429, "TooManyRequests").meaning == .retryLater(newConnection: false, tooManyRequests: true))
        #expect(Self.answer(500, "InternalServerError").meaning == .retryLater(newConnection: false, tooManyRequests: false))
        #expect(Self.answer(503, "ServiceUnavailable").meaning == .retryLater(newConnection: true, tooManyRequests: false))
        #expect(Self.answer(503, "Shutdown").meaning == .retryLater(newConnection: true, tooManyRequests: false))
        #expect(Self.answer(502).meaning == .retryLater(newConnection: true, tooManyRequests: false), "a proxy's 502 without a reason")
        for kind in TransportFailure.Kind.allCases where kind != .tlsTrust {
            #expect(PushOutcome.transportFailure(TransportFailure(kind, "x")).meaning == .unknown, "\(kind)")
        }
        #expect(PushOutcome.transportFailure(TransportFailure(.tlsTrust, "TLS trust: x")).meaning == .untrusted,
                "an untrusted server stops the run, it is not retried")
    }

    @Test func onlyErrorsAreServerFailuresOrPushbackNeverSlowAnswers() {
        #expect(AnswerMeaning.isServerFailure(Self.answer(503, "ServiceUnavailable")))
        #expect(AnswerMeaning.isServerFailure(.transportFailure(TransportFailure(.timedOut, "no answer"))))
        #expect(!AnswerMeaning.isServerFailure(Self.answer(429, "TooManyRequests")))
        #expect(AnswerMeaning.isPushback(Self.answer(429, "TooManyRequests")))
        #expect(!AnswerMeaning.isPushback(Self.answer(200)))
        #expect(!AnswerMeaning.isPushback(Self.answer(410, "Unregistered")))
    }
}
