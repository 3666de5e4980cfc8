import Foundation
import HeraldCore
@testable import HeraldDelivery
import Testing

/// `AbortScope`: whom an abort-class answer is about, and the feed holding a refused topic's jobs.
@Suite struct AbortScopeTests {
    static let credentials = ["InvalidProviderToken", "MissingProviderToken", "BadCertificate", "BadCertificateEnvironment",
                              "BadEnvironmentKeyIdInToken", "BadEnvironmentKeyInToken"]
    static let topic = ["BadTopic", "MissingTopic", "TopicDisallowed", "FeatureNotEnabled", "TopicMismatch"]

    @Test func everyAbortReasonIsAboutTheCredentialsOrTheTopic() {
        for r in Self.credentials { #expect(AnswerMeaning.abortScope(APNsReason(r)) == .credentials, "\(r)") }
        for r in Self.topic { #expect(AnswerMeaning.abortScope(APNsReason(r)) == .topic, "\(r)") }
        // Every abort reason of the table is named above: a new one must be placed on purpose.
        let aborts = Set(APNsReasonTable.entries.filter { $0.action == .abortCampaign }.map(\.reason.rawValue))
        #expect(aborts == Set(Self.credentials + Self.topic))
    }

    @Test func otherAnswersHaveNoScope() {
        for r in ["Forbidden", "BadDeviceToken", "ExpiredProviderToken", "TooManyRequests", "SomethingAppleAddsLater"] {
            #expect(AnswerMeaning.abortScope(APNsReason(r)) == nil, "\(r)")
        }
        #expect(AnswerMeaning.abortScope(nil) == nil)
        #expect(PushOutcome.answered(status: 200, apnsId: nil, reason: nil, timestamp: nil).abortScope == nil)
        #expect(PushOutcome.transportFailure(TransportFailure(.tlsTrust, "x")).abortScope == nil)
        #expect(PushOutcome.answered(status: 400, apnsId: nil, reason: "TopicDisallowed", timestamp: nil).abortScope == .topic)
        #expect(PushOutcome.answered(status: 403, apnsId: nil, reason: "BadCertificate", timestamp: nil).abortScope == .credentials)
    }

    static func job(_ i: Int, _ topic: String) -> PushJob {
        PushJob(index: i, request: PushRequest(token: try! DeviceToken.normalize(String(format: "%064x", i)).get(), payload: [],
                                               apnsId: "", topic: topic, pushType: .alert, priority: 10))
    }

    @Test func aBlockedTopicsJobsAreHeldNotTakenAndComeBackOnWithdrawal() {
        var feed = FeedBuffer()
        feed.append([Self.job(1, "a"), Self.job(2, "b"), Self.job(3, "a"), Self.job(4, "b"), Self.job(5, "a")])
        feed.block(topic: "b")
        #expect(feed.take(2).map(\.index) == [1, 3], "past the held job, so a connection with room is not left idle")
        // Job 4 is met (and held) only when a connection next takes.
        #expect(feed.count == 2 && feed.queued == 3, "held jobs are queued but not takeable")
        #expect(feed.take(5).map(\.index) == [5])
        #expect(feed.count == 0 && feed.queued == 2)
        feed.append([Self.job(6, "a"), Self.job(7, "b")])
        #expect(feed.remove { $0.index == 2 || $0.index == 6 }.map(\.index).sorted() == [2, 6])
        #expect(feed.removeAll().map(\.index).sorted() == [4, 7], "held and waiting jobs alike")
        #expect(feed.queued == 0)
    }

    @Test func aWithdrawalByPredicateKeepsTheOthersInOrder() {
        var feed = FeedBuffer()
        feed.append((1...6).map { Self.job($0, "a") })
        _ = feed.take(1)
        #expect(feed.remove { $0.index.isMultiple(of: 2) }.map(\.index) == [2, 4, 6])
        #expect(feed.take(10).map(\.index) == [3, 5])
    }
}
