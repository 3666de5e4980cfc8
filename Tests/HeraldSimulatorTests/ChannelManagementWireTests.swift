import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// The channel management port and the broadcast endpoint over real HTTP/2 and TLS on loopback,
/// through herald's own libcurl client (`HTTPCall`): the ids come back in headers, and both ports
/// share one set of channels.
@Suite struct ChannelManagementWireTests {
    @Test func aChannelCreatedOnTheManagementPortTakesBroadcastsOnThePushPort() throws {
        let h = try SimulatorHarness { $0.managementPort = 0 }
        defer { h.shutdown() }
        let management = try #require(h.sim.managementPort)
        #expect(management != h.sim.port)
        let jwt = try h.jwt()
        func call(_ method: String, port: Int, _ path: String, headers: [String] = [], body: String = "") throws -> HTTPCall.Answer {
            var c = HTTPCall(method: method, url: "https://127.0.0.1:\(port)\(path)", headers: ["authorization: bearer \(jwt)"] + headers,
                             body: Array(body.utf8))
            c.trust = .caPEM(h.sim.caCertificatePEM)
            return try c.perform().get()
        }
        let requestId = "0f2c6e1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
        let created = try call("POST", port: management, "/1/apps/\(SimulatorHarness.bundle)/channels", headers: ["apns-request-id: \(requestId)"],
                               body: #"{"message-storage-policy": 0, "push-type": "LiveActivity"}"#)
        #expect(created.status == 201 && created.headers["apns-request-id"] == requestId)
        let channel = try #require(created.headers["apns-channel-id"])

        let listed = try call("GET", port: management, "/1/apps/\(SimulatorHarness.bundle)/all-channels")
        #expect(listed.status == 200 && String(decoding: listed.body, as: UTF8.self) == #"{"channels":["\#(channel)"]}"#)
        #expect(listed.headers["apns-request-id"]?.count == 36, "APNs makes one up when none was sent")

        let broadcast = try call("POST", port: h.sim.port, "/4/broadcasts/apps/\(SimulatorHarness.bundle)",
                                 headers: ["apns-channel-id: \(channel)", "apns-push-type: liveactivity", "apns-expiration: 0",
                                           "apns-priority: 10", "apns-request-id: \(requestId)"],
                                 body: #"{"aps":{"event":"update","timestamp":1,"content-state":{"home":1}}}"#)
        #expect(broadcast.status == 200 && broadcast.headers["apns-request-id"] == requestId && broadcast.headers["apns-unique-id"] != nil)
        #expect(broadcast.headers["apns-id"] == nil)

        let deleted = try call("DELETE", port: management, "/1/apps/\(SimulatorHarness.bundle)/channels", headers: ["apns-channel-id: \(channel)"])
        #expect(deleted.status == 204)
        let late = try call("POST", port: h.sim.port, "/4/broadcasts/apps/\(SimulatorHarness.bundle)",
                            headers: ["apns-channel-id: \(channel)", "apns-push-type: liveactivity", "apns-expiration: 0", "apns-priority: 10"],
                            body: #"{"aps":{"event":"end","timestamp":2,"content-state":{}}}"#)
        #expect(late.status == 400 && String(decoding: late.body, as: UTF8.self) == #"{"reason":"ChannelNotRegistered"}"#)
        // A device push on the management port is not a path it serves.
        let wrong = try call("POST", port: management, "/3/device/\(Push.token(1))", body: #"{"aps":{"alert":"x"}}"#)
        #expect(wrong.status == 404)
    }
}
