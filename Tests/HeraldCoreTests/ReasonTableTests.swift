import HeraldCore
import Testing

@Suite struct ReasonTableTests {
    @Test func appleNoRetryReasonsArePermanent() {
        // Apple: "Don't retry ... BadDeviceToken, DeviceTokenNotForTopic, Forbidden, ExpiredToken, Unregistered, or PayloadTooLarge."
        for r in ["BadDeviceToken", "DeviceTokenNotForTopic", "Forbidden", "ExpiredToken", "Unregistered", "PayloadTooLarge"] {
            #expect(APNsReason(r).action == .permanent, "\(r)")
        }
    }

    @Test func configurationReasonsAbortTheCampaign() {
        for r in ["InvalidProviderToken", "BadCertificate", "BadCertificateEnvironment", "BadEnvironmentKeyIdInToken",
                  "BadTopic", "TopicDisallowed", "MissingTopic"] {
            #expect(APNsReason(r).action == .abortCampaign, "\(r)")
        }
    }

    @Test func transientReasonsAreRetried() {
        #expect(APNsReason("TooManyRequests").action == .retryAfterDelay)
        #expect(APNsReason("InternalServerError").action == .retryAfterDelay)
        #expect(APNsReason("ServiceUnavailable").action == .retryOnNewConnection)
        #expect(APNsReason("Shutdown").action == .retryOnNewConnection)
        #expect(APNsReason("ExpiredProviderToken").action == .refreshTokenAndRetry)
    }

    @Test func statusesMatchApple() {
        let expected: [String: Int] = ["Unregistered": 410, "ExpiredToken": 410, "PayloadTooLarge": 413, "TooManyRequests": 429,
                                       "BadPath": 404, "MethodNotAllowed": 405, "InvalidProviderToken": 403, "BadDeviceToken": 400,
                                       "InternalServerError": 500, "ServiceUnavailable": 503]
        for (reason, status) in expected { #expect(APNsReason(reason).entry?.status == status, "\(reason)") }
        #expect(Set(APNsReasonTable.entries.map(\.reason)).count == APNsReasonTable.entries.count)
    }

    @Test func unknownReasonsAreCarriedAndNotRetried() {
        let r = APNsReason("SomethingNew")
        #expect(!r.isKnown)
        #expect(r.action == .permanent)
        #expect(r.rawValue == "SomethingNew")
    }

    @Test func bareStatusesWithoutReason() {
        #expect(APNsReasonTable.action(status: 503, reason: nil) == .retryOnNewConnection)
        #expect(APNsReasonTable.action(status: 500, reason: nil) == .retryAfterDelay)
        #expect(APNsReasonTable.action(status: 400, reason: nil) == .permanent)
    }
}
