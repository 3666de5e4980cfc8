import Foundation
import HeraldCore
import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// Every reason the simulator answers, over TLS + HTTP/2 through herald's own client
/// (`TestConnection`; a malformed request through `HTTPCall`), each on a fresh connection. Statuses must be the ones `APNsReasonTable` gives.
@Suite(.serialized) struct SimulatorReasonTests {
    enum Send {
        case push(PushRequest, authorization: String?)
        case raw(RawRequest)
    }

    func check(_ h: SimulatorHarness, _ name: String, _ send: Send, _ status: Int, _ reason: String?,
               sourceLocation: SourceLocation = #_sourceLocation) throws {
        let outcome: PushOutcome
        switch send {
        case .push(let r, let auth): outcome = try h.send(r, authorization: auth)
        case .raw(let r): outcome = try h.send(raw: r)
        }
        #expect(outcome.status == status, "\(name): \(outcome)", sourceLocation: sourceLocation)
        #expect(outcome.reason == reason, "\(name): \(outcome)", sourceLocation: sourceLocation)
        if let reason, let entry = APNsReasonTable.entry(for: APNsReason(reason)) {
            #expect(entry.status == status, "\(name): the table's status", sourceLocation: sourceLocation)
        }
    }

    @Test func everyRequestRuleAnswersWithItsReason() throws {
        let h = try SimulatorHarness()
        defer { h.shutdown() }
        let jwt = try h.jwt()
        func push(_ change: (inout PushRequest) -> Void = { _ in }) -> Send { .push(Push.request(1, change), authorization: jwt) }
        func raw(_ change: (inout RawRequest) -> Void) -> Send {
            var r = RawRequest.valid(authorization: jwt)
            change(&r)
            return .raw(r)
        }
        let long = String(repeating: "x", count: 4090)
        let cases: [(String, Send, Int, String?)] = [
            ("valid", push(), 200, nil),
            ("path not /3/device/", raw { $0.path = "/3/devices/" + Push.token(1) }, 404, "BadPath"),
            ("path with a slash after the token", push { $0.token = DeviceToken(trustedCanonical: Push.token(1) + "/x") }, 404, "BadPath"),
            ("no token in the path", push { $0.token = DeviceToken(trustedCanonical: "") }, 400, "MissingDeviceToken"),
            ("GET", raw { $0.method = "GET" }, 405, "MethodNotAllowed"),
            ("PUT", raw { $0.method = "PUT" }, 405, "MethodNotAllowed"),
            ("two apns-topic headers", raw { $0.headerLines.append("apns-topic: \(SimulatorHarness.bundle)") }, 400, "DuplicateHeaders"),
            ("two apns-id headers", raw { $0.headerLines += ["apns-id: \(Push.apnsId(1))", "apns-id: \(Push.apnsId(2))"] }, 400, "DuplicateHeaders"),
            ("no authorization", .push(Push.request(1), authorization: nil), 403, "MissingProviderToken"),
            ("authorization not bearer", raw { $0.headerLines[0] = "authorization: basic abc" }, 403, "InvalidProviderToken"),
            ("bearer garbage", .push(Push.request(1), authorization: "not.a.jwt"), 403, "InvalidProviderToken"),
            ("non-hex token", push { $0.token = DeviceToken(trustedCanonical: String(repeating: "zz", count: 32)) }, 400, "BadDeviceToken"),
            ("odd-length token", push { $0.token = DeviceToken(trustedCanonical: Push.token(1) + "a") }, 400, "BadDeviceToken"),
            ("7-byte token", push { $0.token = DeviceToken(trustedCanonical: String(repeating: "ab", count: 7)) }, 400, "BadDeviceToken"),
            ("257-byte token", push { $0.token = DeviceToken(trustedCanonical: String(repeating: "ab", count: 257)) }, 400, "BadDeviceToken"),
            ("8-byte token", push { $0.token = DeviceToken(trustedCanonical: String(repeating: "ab", count: 8)) }, 200, nil),
            ("100-byte upper-case token", push { $0.token = DeviceToken(trustedCanonical: String(repeating: "AB", count: 100)) }, 200, nil),
            ("no apns-topic", push { $0.topic = "" }, 400, "MissingTopic"),
            ("another app's topic", push { $0.topic = "com.example.other" }, 400, "TopicDisallowed"),
            ("unknown suffix", push { $0.topic = SimulatorHarness.bundle + ".stickers" }, 400, "TopicDisallowed"),
            ("voip on the bare bundle", push { $0.pushType = .voip }, 400, "BadTopic"),
            ("alert on the .voip topic", push { $0.topic = SimulatorHarness.bundle + ".voip" }, 400, "BadTopic"),
            ("voip on .voip", push { $0.pushType = .voip; $0.topic = SimulatorHarness.bundle + ".voip" }, 200, nil),
            ("liveactivity on its topic", push { $0.pushType = .liveactivity; $0.topic = SimulatorHarness.bundle + ".push-type.liveactivity" }, 200, nil),
            ("unknown push type", raw { $0.headerLines[2] = "apns-push-type: banner" }, 400, "InvalidPushType"),
            ("priority 7", push { $0.priority = 7 }, 400, "BadPriority"),
            ("background at 10", push { $0.pushType = .background }, 400, "BadPriority"),
            ("background at 5", push { $0.pushType = .background; $0.priority = 5 }, 200, nil),
            ("liveactivity at 1", push { $0.pushType = .liveactivity; $0.topic = SimulatorHarness.bundle + ".push-type.liveactivity"; $0.priority = 1 }, 400, "BadPriority"),
            ("upper-case apns-id", push { $0.apnsId = "0000000A-0000-4000-8000-00000000000B" }, 400, "BadMessageId"),
            ("apns-id without hyphens", push { $0.apnsId = String(repeating: "a", count: 36) }, 400, "BadMessageId"),
            ("negative expiration", push { $0.expiration = -1 }, 400, "BadExpirationDate"),
            ("text expiration", raw { $0.headerLines.append("apns-expiration: tomorrow") }, 400, "BadExpirationDate"),
            ("expiration 0", push { $0.expiration = 0 }, 200, nil),
            ("collapse id of 65 bytes", push { $0.collapseId = String(repeating: "c", count: 65) }, 400, "BadCollapseId"),
            ("collapse id of 64 bytes", push { $0.collapseId = String(repeating: "c", count: 64) }, 200, nil),
            ("empty body", push { $0.payload = [] }, 400, "PayloadEmpty"),
            ("4097-byte body", push { $0.payload = Array(#"{"aps":{},"x":"\#(long)"}"#.utf8) }, 413, "PayloadTooLarge"),
            ("4097-byte voip body", push { $0.pushType = .voip; $0.topic = SimulatorHarness.bundle + ".voip"
                $0.payload = Array(#"{"aps":{},"x":"\#(long)"}"#.utf8) }, 200, nil),
            ("5121-byte voip body", push { $0.pushType = .voip; $0.topic = SimulatorHarness.bundle + ".voip"
                $0.payload = Array(#"{"aps":{},"x":"\#(long)\#(String(repeating: "y", count: 1024))"}"#.utf8) }, 413, "PayloadTooLarge"),
            ("body not JSON", push { $0.payload = Array("hello".utf8) }, 400, "BadPayload"),
            ("body without aps", push { $0.payload = Array(#"{"alert":"hi"}"#.utf8) }, 400, "BadPayload"),
            ("aps not an object", push { $0.payload = Array(#"{"aps":"hi"}"#.utf8) }, 400, "BadPayload"),
            ("JSON array", push { $0.payload = Array(#"[{"aps":{}}]"#.utf8) }, 400, "BadPayload"),
        ]
        for (name, send, status, reason) in cases { try check(h, name, send, status, reason) }
        #expect(h.sim.requestLog.count == cases.count)
    }

    /// A request breaking every rule at once, repaired one rule at a time: each answer is the
    /// next check in the documented order.
    @Test func firstFailingCheckDecides() throws {
        let h = try SimulatorHarness()
        defer { h.shutdown() }
        var path = "/2/device/zz"
        var method: String? = "GET"
        var headers = ["apns-topic: com.example.other", "apns-topic: com.example.other", "apns-push-type: banner",
                       "apns-priority: 7", "apns-id: X", "apns-expiration: soon", "apns-collapse-id: " + String(repeating: "c", count: 65)]
        var body: [UInt8] = []
        func next(_ reason: String?, _ status: Int) throws {
            try check(h, "expecting \(reason ?? "200")", .raw(RawRequest(method: method, path: path, headerLines: headers + ["Expect:", "Accept:"], body: body)),
                      status, reason)
        }
        try next("BadPath", 404)
        path = "/3/device/zz"
        try next("MethodNotAllowed", 405)
        method = nil
        try next("DuplicateHeaders", 400)
        headers.remove(at: 1)
        try next("MissingProviderToken", 403)
        headers.append("authorization: bearer " + (try h.jwt()))
        try next("BadDeviceToken", 400)
        path = "/3/device/" + Push.token(1)
        try next("TopicDisallowed", 400)
        headers[0] = "apns-topic: " + SimulatorHarness.bundle
        try next("InvalidPushType", 400)
        headers[1] = "apns-push-type: alert"
        try next("BadPriority", 400)
        headers[2] = "apns-priority: 5"
        try next("BadMessageId", 400)
        headers[3] = "apns-id: " + Push.apnsId(1)
        try next("BadExpirationDate", 400)
        headers[4] = "apns-expiration: 0"
        try next("BadCollapseId", 400)
        headers[5] = "apns-collapse-id: c"
        try next("PayloadEmpty", 400)
        body = Array(#"{"aps":{}}"#.utf8)
        try next(nil, 200)
        headers.removeFirst()
        try next("MissingTopic", 400)
    }

    @Test func answersEchoAValidApnsIdAndGenerateOneOtherwise() throws {
        let h = try SimulatorHarness()
        defer { h.shutdown() }
        let jwt = try h.jwt()
        #expect(try h.send(Push.request(7), authorization: jwt).apnsId == Push.apnsId(7))
        let generated = try h.send(Push.request(8) { $0.apnsId = "not-a-uuid" }, authorization: jwt).apnsId
        #expect(generated.map(RequestValidator.isCanonicalUUID) == true)
    }
}
