import Foundation
import HeraldCore
@testable import HeraldOperations
import HeraldState
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// An event's line (its keys are a contract) and the file sink's handling of a line a crash cut.
@Suite struct DeliveryEventTests {
    let dir = TemporaryDirectory("events")

    func event(_ status: RecipientStatus, http: Int?, reason: String = "", invalidatedAt: Int64? = nil) -> OutboxEvent {
        OutboxEvent(id: 7, runId: "r1", campaign: "spring", recipientId: "u-\"1\"", token: String(repeating: "ab", count: 32),
                    apnsId: "a-1", status: status, reason: reason, httpStatus: http, invalidatedAt: invalidatedAt,
                    at: "2026-11-26T06:00:00.000Z")
    }

    /// A broadcast campaign's recipient is a channel: `channel_id` names it, `token` is null.
    @Test func aBroadcastEventNamesItsChannel() throws {
        var e = event(.sent, http: 200)
        e = OutboxEvent(id: e.id, runId: e.runId, campaign: e.campaign, recipientId: "", token: "bWF0Y2gtNDI=", apnsId: e.apnsId,
                        status: .sent, reason: "", httpStatus: 200, invalidatedAt: nil, at: e.at)
        e.broadcast = true
        var out: [UInt8] = []
        DeliveryEvent.line(e, shard: nil, into: &out)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(out)) as? [String: Any])
        #expect(o["token"] is NSNull && o["channel_id"] as? String == "bWF0Y2gtNDI=" && o["type"] as? String == "sent")
        // docs/events.md: what the recipient does not have is null, not "".
        #expect(o["recipient_id"] is NSNull && o["reason"] is NSNull, "\(o)")
    }

    @Test func aLineIsOneJSONObjectWithEveryKey() throws {
        var out: [UInt8] = []
        DeliveryEvent.line(event(.failed, http: 410, reason: "Unregistered", invalidatedAt: 1_764_136_800_000), shard: "1/4", into: &out)
        #expect(out.last == UInt8(ascii: "\n") && out.filter { $0 == UInt8(ascii: "\n") }.count == 1)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(out)) as? [String: Any])
        #expect(Set(o.keys) == ["event_id", "type", "at", "campaign", "run_id", "shard", "recipient_id", "token", "apns_id",
                                "status", "reason", "http_status", "invalidated_at", "channel_id", "variant", "rollout", "app", "environment"])
        #expect(o["variant"] is NSNull && o["rollout"] is NSNull, "no experiment")
        #expect(o["app"] is NSNull && o["environment"] is NSNull, "one app in one environment")
        #expect(o["channel_id"] is NSNull && o["token"] as? String != nil, "a device push names its token")
        #expect(o["event_id"] as? String == "r1.7" && o["type"] as? String == "unregistered" && o["status"] as? String == "failed")
        #expect(o["recipient_id"] as? String == "u-\"1\"" && o["shard"] as? String == "1/4" && o["http_status"] as? Int == 410)
        #expect(o["invalidated_at"] as? String == "2025-11-26T06:00:00.000Z")
    }

    @Test func typesFollowTheStatus() {
        #expect(DeliveryEvent.type(of: event(.sent, http: 200)) == "sent")
        #expect(DeliveryEvent.type(of: event(.failed, http: 400, reason: "BadDeviceToken")) == "failed")
        #expect(DeliveryEvent.type(of: event(.failed, http: 410, reason: "ExpiredToken")) == "unregistered")
        #expect(DeliveryEvent.type(of: event(.suppressed, http: nil, reason: "suppression_list")) == "suppressed")
        #expect(DeliveryEvent.type(of: event(.throttled, http: nil, reason: "silent_budget")) == "throttled")
    }

    /// A crash in the middle of an append leaves a line without its end: the next batch cuts it
    /// (its event is still in the outbox and comes again whole) instead of joining it to the next.
    @Test func theFileSinkCutsALineACrashLeftUnfinished() throws {
        let path = try dir.write("out/events.ndjson", "{\"a\":1}\n{\"b\":2}\n{\"c\":")
        let sink = try FileSink(path: path, lockTimeout: 1)
        #expect(sink.deliver(Array("{\"c\":3}\n".utf8)) == .delivered)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n")
        // A file of one cut line, longer than a read: emptied first.
        let long = try dir.write("out/long.ndjson", String(repeating: "x", count: 10_000))
        #expect(try FileSink(path: long, lockTimeout: 1).deliver(Array("{}\n".utf8)) == .delivered)
        #expect(try String(contentsOfFile: long, encoding: .utf8) == "{}\n")
        // A new file is the owner's only.
        let fresh = dir.file("out/new/events.ndjson")
        _ = try FileSink(path: fresh, lockTimeout: 1)
        #expect(try FileManager.default.attributesOfItem(atPath: fresh)[.posixPermissions] as? Int == 0o600)
    }

    /// Another writer's batch in progress (its flock held, its line unfinished) is neither cut
    /// nor appended to: the batch waits for the lock, then is tried again later.
    @Test func theFileSinkWaitsForAnotherWritersLock() throws {
        let path = try dir.write("out/shared.ndjson", "{\"a\":1}\n{\"other\":")
        let other = open(path, O_RDWR | O_APPEND)
        try #require(other >= 0 && flock(other, LOCK_EX) == 0)
        defer { close(other) }
        let sink = try FileSink(path: path, lockTimeout: 1)
        guard case .retry(let why) = sink.deliver(Array("{\"b\":2}\n".utf8)) else { Issue.record("not tried again later"); return }
        #expect(why.contains("locked by another writer"), "\(why)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "{\"a\":1}\n{\"other\":")
        _ = "1}\n".withCString { write(other, $0, 3) }
        flock(other, LOCK_UN)
        #expect(sink.deliver(Array("{\"b\":2}\n".utf8)) == .delivered)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "{\"a\":1}\n{\"other\":1}\n{\"b\":2}\n")
    }

    @Test func aFileThatCannotBeOpenedIsAnEventsError() throws {
        try dir.write("out/dir/x", "")
        #expect(throws: EventsError.self) { try FileSink(path: dir.file("out/dir"), lockTimeout: 1) }
    }
}
