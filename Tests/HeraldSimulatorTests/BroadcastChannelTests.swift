import Crypto
import Foundation
import HeraldCore
@testable import HeraldSimulator
import Testing

/// The simulator's broadcast channels without sockets: the management API (create, read, list,
/// delete, each error reason in order) and the broadcast endpoint's checks, against one registry.
@Suite struct BroadcastChannelTests {
    static let teamId = "TEAM123456"
    static let keyId = "KEY1234567"
    static let bundle = "com.example.app"
    let key = P256.Signing.PrivateKey()
    let now = Date(timeIntervalSince1970: 1_750_000_000)
    let connection = SimulatorConnection(id: 1)
    /// One provider token for the whole connection (a new one would be a token update).
    let bearer: String

    init() throws {
        bearer = try HandMadeJWT.make(key: key, header: #"{"alg":"ES256","kid":"\#(Self.keyId)"}"#,
                                      claims: #"{"iss":"\#(Self.teamId)","iat":\#(Int(now.timeIntervalSince1970))}"#)
    }

    func configuration(_ configure: (inout SimulatorConfiguration) -> Void = { _ in }) -> SimulatorConfiguration {
        var c = SimulatorConfiguration(teamId: Self.teamId, keyId: Self.keyId, publicKeyPEM: key.publicKey.pemRepresentation)
        c.bundleId = Self.bundle
        configure(&c)
        return c
    }


    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: String = "", auth: Bool = true) throws -> SimulatorRequest {
        var fields: [(name: String, value: String)] = headers.map { ($0.0, $0.1) }
        if auth { fields.append(("authorization", "bearer " + bearer)) }
        return SimulatorRequest(method: method, path: path, headers: fields, body: Array(body.utf8))
    }

    static let channels = "/1/apps/\(bundle)/channels"
    static let create = #"{"message-storage-policy": 1, "push-type": "LiveActivity"}"#

    func text(_ v: SimulatorVerdict) -> String { v.body.map { String(decoding: $0, as: UTF8.self) } ?? "" }

    @Test func channelsAreCreatedReadListedAndDeleted() throws {
        let registry = ChannelRegistry()
        let m = try ChannelManagementBehavior(configuration: configuration(), channels: registry)
        let created = m.respond(to: try request("POST", Self.channels, body: Self.create), on: connection, now: now)
        #expect(created.status == 201 && created.body == nil)
        let id = try #require(created.extraHeaders["apns-channel-id"])
        #expect(Data(base64Encoded: id)?.count == 16)
        let noStorage = m.respond(to: try request("POST", Self.channels, body: #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#),
                                  on: connection, now: now)
        let other = try #require(noStorage.extraHeaders["apns-channel-id"])
        #expect(other != id)

        let read = m.respond(to: try request("GET", Self.channels, headers: [("apns-channel-id", id)]), on: connection, now: now)
        #expect(read.status == 200 && text(read) == #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
        let all = m.respond(to: try request("GET", "/1/apps/\(Self.bundle)/all-channels"), on: connection, now: now)
        #expect(all.status == 200 && text(all) == #"{"channels":["\#(id)","\#(other)"]}"#)

        let deleted = m.respond(to: try request("DELETE", Self.channels, headers: [("apns-channel-id", id)]), on: connection, now: now)
        #expect(deleted.status == 204 && deleted.body == nil)
        let again = m.respond(to: try request("DELETE", Self.channels, headers: [("apns-channel-id", id)]), on: connection, now: now)
        #expect(again.status == 400 && again.reason == "ChannelNotRegistered")
        #expect(registry.list(bundleId: Self.bundle) == [other])
    }

    /// Ids follow from the seed (faults are keyed by channel, so a rehearsal meets the same ones
    /// again), never repeat, and a deleted one is not given again.
    @Test func channelIdsFollowFromTheSeed() throws {
        let a = ChannelRegistry(seed: 7), b = ChannelRegistry(seed: 7), c = ChannelRegistry(seed: 8)
        let ids = (0..<50).compactMap { _ in a.create(bundleId: Self.bundle, policy: .mostRecentMessageStored) }
        #expect(Set(ids).count == 50 && ids.allSatisfy { Data(base64Encoded: $0)?.count == 16 })
        #expect(a.delete(bundleId: Self.bundle, channel: ids[0]))
        #expect(a.create(bundleId: Self.bundle, policy: .noMessageStored) != ids[0])
        #expect((0..<50).compactMap { _ in b.create(bundleId: Self.bundle, policy: .mostRecentMessageStored) } == ids)
        #expect(c.create(bundleId: Self.bundle, policy: .mostRecentMessageStored) != ids[0])
    }

    /// The in-process simulator of a broadcast job takes a channel it has never seen as created.
    @Test func anAdoptingRegistryTakesUnknownChannels() throws {
        let registry = ChannelRegistry()
        #expect(registry.policy(bundleId: Self.bundle, channel: "bWF0Y2gtNDI=") == nil)
        #expect(registry.adopt(bundleId: Self.bundle, channel: "bWF0Y2gtNDI=") == .mostRecentMessageStored)
        #expect(registry.list(bundleId: Self.bundle) == ["bWF0Y2gtNDI="])
    }

    @Test func managementErrorsInOrder() throws {
        let registry = ChannelRegistry(limit: 1)
        let m = try ChannelManagementBehavior(configuration: configuration(), channels: registry)
        let cases: [(SimulatorRequest, Int, APNsReason)] = [
            (try request("POST", "/1/apps/\(Self.bundle)/channel", body: Self.create), 404, "BadPath"),
            (try request("POST", "/2/apps/\(Self.bundle)/channels", body: Self.create), 404, "BadPath"),
            (try request("PUT", Self.channels, body: Self.create), 405, "MethodNotAllowed"),
            (try request("DELETE", "/1/apps/\(Self.bundle)/all-channels"), 405, "MethodNotAllowed"),
            (try request("POST", Self.channels, body: Self.create, auth: false), 403, "MissingProviderToken"),
            (try request("POST", "/1/apps/com.example.other/channels", body: Self.create), 403, "TopicMismatch"),
            (try request("POST", Self.channels, body: "{not json"), 400, "BadRequestPayload"),
            (try request("POST", Self.channels, body: #"{"message-storage-policy":1,"push-type":"LiveActivity","ttl":5}"#), 400, "BadRequestParams"),
            (try request("POST", Self.channels, body: #"{"message-storage-policy":2,"push-type":"LiveActivity"}"#), 400, "BadRequestParams"),
            (try request("POST", Self.channels, body: #"{"message-storage-policy":1,"push-type":"alert"}"#), 400, "BadRequestParams"),
            (try request("POST", Self.channels, body: #"{"push-type":"LiveActivity"}"#), 400, "BadRequestParams"),
            (try request("POST", Self.channels, body: #"{"message-storage-policy":true,"push-type":"LiveActivity"}"#), 400, "BadRequestParams"),
            (try request("GET", Self.channels), 400, "MissingChannelId"),
            (try request("GET", Self.channels, headers: [("apns-channel-id", "not base64!")]), 400, "BadChannelId"),
            (try request("GET", Self.channels, headers: [("apns-channel-id", "dW5rbm93bg==")]), 400, "ChannelNotRegistered"),
        ]
        for (r, status, reason) in cases {
            let v = m.respond(to: r, on: connection, now: now)
            #expect(v.status == status && v.reason == reason, "\(r.method) \(r.path) \(String(decoding: r.body, as: UTF8.self))")
            #expect(text(v) == #"{"reason":"\#(reason.rawValue)"}"#)
        }
        #expect(m.respond(to: try request("POST", Self.channels, body: Self.create), on: connection, now: now).status == 201)
        let full = m.respond(to: try request("POST", Self.channels, body: Self.create), on: connection, now: now)
        #expect(full.status == 400 && full.reason == "CannotCreateChannelConfig", "the app's channel limit")
    }

    /// A broadcast meets Apple's checks in order, then the channel's storage policy.
    @Test func broadcastsAreCheckedInOrder() throws {
        let registry = ChannelRegistry()
        let stored = try #require(registry.create(bundleId: Self.bundle, policy: .mostRecentMessageStored))
        let unstored = try #require(registry.create(bundleId: Self.bundle, policy: .noMessageStored))
        let b = try APNsBehavior(configuration: configuration(), channels: registry)
        let path = "/4/broadcasts/apps/\(Self.bundle)"
        let body = #"{"aps":{"event":"update","timestamp":1750000000,"content-state":{"home":1}}}"#
        func headers(_ change: (inout [String: String]) -> Void = { _ in }) -> [(String, String)] {
            var h = ["apns-channel-id": stored, "apns-push-type": "liveactivity", "apns-expiration": "1750003600", "apns-priority": "10",
                     "apns-request-id": "00000000-0000-4000-8000-000000000001"]
            change(&h)
            return h.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        }
        let ok = b.respond(to: try request("POST", path, headers: headers(), body: body), on: connection, now: now)
        #expect(ok.status == 200 && ok.reason == nil)
        #expect(b.respond(to: try request("POST", path, headers: headers { $0["apns-channel-id"] = unstored; $0["apns-expiration"] = "0" }, body: body),
                          on: connection, now: now).status == 200, "expiration 0 on a channel without storage")
        let cases: [(SimulatorRequest, Int, APNsReason)] = [
            (try request("POST", "/4/broadcasts/\(Self.bundle)", headers: headers(), body: body), 404, "BadPath"),
            (try request("GET", path, headers: headers(), body: body), 405, "MethodNotAllowed"),
            (try request("POST", path, headers: headers(), body: body, auth: false), 403, "MissingProviderToken"),
            (try request("POST", "/4/broadcasts/apps/\(Self.bundle).push-type.liveactivity", headers: headers(), body: body), 400, "TopicDisallowed"),
            (try request("POST", "/4/broadcasts/apps/com.example.other", headers: headers(), body: body), 403, "TopicMismatch"),
            (try request("POST", path, headers: headers { $0["apns-channel-id"] = nil }, body: body), 400, "MissingChannelId"),
            (try request("POST", path, headers: headers { $0["apns-channel-id"] = "%%%" }, body: body), 400, "BadChannelId"),
            (try request("POST", path, headers: headers { $0["apns-push-type"] = nil }, body: body), 400, "MissingPushType"),
            (try request("POST", path, headers: headers { $0["apns-push-type"] = "alert" }, body: body), 400, "InvalidPushType"),
            (try request("POST", path, headers: headers { $0["apns-expiration"] = nil }, body: body), 400, "BadExpirationDate"),
            (try request("POST", path, headers: headers { $0["apns-priority"] = "7" }, body: body), 400, "BadPriority"),
            (try request("POST", path, headers: headers { $0["apns-priority"] = nil }, body: body), 400, "BadPriority"),
            (try request("POST", path, headers: headers { $0["apns-channel-id"] = "dW5rbm93bg==" }, body: body), 400, "ChannelNotRegistered"),
            (try request("POST", path, headers: headers { $0["apns-channel-id"] = unstored }, body: body), 400, "BadExpirationDate"),
            (try request("POST", path, headers: headers()), 400, "PayloadEmpty"),
            (try request("POST", path, headers: headers(), body: #"{"aps":{"e":""#.padding(toLength: 5_121, withPad: "x", startingAt: 0)), 413, "PayloadTooLarge"),
            (try request("POST", path, headers: headers(), body: #"{"event":"update"}"#), 400, "BadRequestPayload"),
        ]
        for (r, status, reason) in cases {
            let v = b.respond(to: r, on: connection, now: now)
            #expect(v.status == status && v.reason == reason, "\(r.method) \(r.path) \(r.headers)")
        }
        // 5,120 bytes exactly is allowed.
        let padded = #"{"aps":{"event":"update"},"x":""# + String(repeating: "y", count: 5_120 - 33) + #""}"#
        #expect(padded.utf8.count == 5_120)
        #expect(b.respond(to: try request("POST", path, headers: headers(), body: padded), on: connection, now: now).status == 200)
    }

    /// Faults apply to broadcasts too, seeded by the channel.
    @Test func broadcastsMeetTheRandomFaults() throws {
        let registry = ChannelRegistry()
        let id = try #require(registry.create(bundleId: Self.bundle, policy: .mostRecentMessageStored))
        let b = try APNsBehavior(configuration: configuration { $0.faults.p503 = 1 }, channels: registry)
        let r = try request("POST", "/4/broadcasts/apps/\(Self.bundle)",
                            headers: [("apns-channel-id", id), ("apns-push-type", "liveactivity"), ("apns-expiration", "0"), ("apns-priority", "10")],
                            body: #"{"aps":{"event":"end","timestamp":1,"content-state":{}}}"#)
        let v = b.respond(to: r, on: connection, now: now)
        #expect(v.status == 503 && v.reason == "ServiceUnavailable" && v.fault == "p503")
    }

    /// Many apps (docs/many-apps.md#broadcasts): channels are per bundle id, so a broadcast for one
    /// app to a channel created under another app of the same key is 400 `ChannelNotRegistered`, as
    /// APNs answers a channel unknown to the path's app; another team's key on the app's path is 403
    /// `TopicMismatch` ("the key's or certificate's bundle ids do not include the bundle id in the
    /// path"), for broadcasts and channel management alike; each app lists only its own channels.
    @Test func aChannelBelongsToTheAppItWasCreatedForAndItsKey() throws {
        let other = P256.Signing.PrivateKey()
        let keys = [SimulatorTokenKey(teamId: Self.teamId, keyId: Self.keyId, publicKeyPEM: key.publicKey.pemRepresentation,
                                      bundleIds: [Self.bundle, "com.example.ipad"]),
                    SimulatorTokenKey(teamId: "TEAMBBBBBB", keyId: "KEYBBBBBBB", publicKeyPEM: other.publicKey.pemRepresentation, bundleIds: ["com.beta.app"])]
        let config = SimulatorConfiguration(tokenKeys: keys)
        let registry = ChannelRegistry()
        let m = try ChannelManagementBehavior(configuration: config, channels: registry)
        let b = try APNsBehavior(configuration: config, channels: registry)
        let created = m.respond(to: try request("POST", Self.channels, body: Self.create), on: connection, now: now)
        let channel = try #require(created.extraHeaders["apns-channel-id"])
        let teamB = try HandMadeJWT.make(key: other, header: #"{"alg":"ES256","kid":"KEYBBBBBBB"}"#,
                                         claims: #"{"iss":"TEAMBBBBBB","iat":\#(Int(now.timeIntervalSince1970))}"#)
        let teamBConnection = SimulatorConnection(id: 2)
        func broadcast(_ bundle: String, teamB useB: Bool = false) throws -> SimulatorVerdict {
            var headers = [("apns-channel-id", channel), ("apns-push-type", "liveactivity"), ("apns-expiration", "0"), ("apns-priority", "10")]
            if useB { headers.append(("authorization", "bearer " + teamB)) }
            let r = try request("POST", "/4/broadcasts/apps/\(bundle)", headers: headers, body: #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#,
                                auth: !useB)
            return b.respond(to: r, on: useB ? teamBConnection : connection, now: now)
        }
        let own = try broadcast(Self.bundle)
        #expect(own.status == 200 && own.topic == Self.bundle, "\(own)")
        let sibling = try broadcast("com.example.ipad")
        #expect(sibling.status == 400 && sibling.reason == "ChannelNotRegistered" && sibling.topic == "com.example.ipad", "\(sibling)")
        let foreign = try broadcast(Self.bundle, teamB: true)
        #expect(foreign.status == 403 && foreign.reason == "TopicMismatch", "\(foreign)")
        let teamBsOwn = try broadcast("com.beta.app", teamB: true)
        #expect(teamBsOwn.status == 400 && teamBsOwn.reason == "ChannelNotRegistered", "\(teamBsOwn)")

        func list(_ bundle: String, teamB useB: Bool = false) throws -> SimulatorVerdict {
            let r = try request("GET", "/1/apps/\(bundle)/all-channels", headers: useB ? [("authorization", "bearer " + teamB)] : [], auth: !useB)
            return m.respond(to: r, on: useB ? teamBConnection : connection, now: now)
        }
        #expect(text(try list(Self.bundle)) == #"{"channels":["\#(channel)"]}"#)
        #expect(text(try list("com.example.ipad")) == #"{"channels":[]}"#)
        #expect(text(try list("com.beta.app", teamB: true)) == #"{"channels":[]}"#)
        let listedByB = try list(Self.bundle, teamB: true)
        #expect(listedByB.status == 403 && listedByB.reason == "TopicMismatch", "\(listedByB)")
    }
}

