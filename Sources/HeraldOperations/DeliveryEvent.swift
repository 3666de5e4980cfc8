import HeraldCore
import HeraldState

/// One delivery event as the receiver reads it: a JSON object on its own line (NDJSON). The keys
/// are a contract (docs/events.md): later versions add keys, never rename them.
public enum DeliveryEvent {
    /// What happened, one word: the recipient's status, except that a failure because APNs said
    /// the token is no longer valid (410) is `unregistered`, the event a backend acts on.
    public static func type(of e: OutboxEvent) -> String {
        if e.status == .failed && (e.httpStatus == 410 || e.reason == "Unregistered") { return "unregistered" }
        return e.status.rawValue
    }

    /// The event's line, newline included.
    public static func line(_ e: OutboxEvent, shard: String?, into out: inout [UInt8]) {
        let members: [JSONValue.Member] = [
            .init("event_id", .string("\(e.runId).\(e.id)")),
            .init("type", .string(type(of: e))),
            .init("at", .string(e.at)),
            .init("campaign", .string(e.campaign)),
            .init("run_id", .string(e.runId)),
            .init("shard", shard.map(JSONValue.string) ?? .null),
            .init("recipient_id", nonEmpty(e.recipientId)),
            .init("token", e.broadcast ? .null : .string(e.token)),
            .init("apns_id", .string(e.apnsId)),
            .init("status", .string(e.status.rawValue)),
            .init("reason", nonEmpty(e.reason)),
            .init("http_status", e.httpStatus.map { .number(String($0)) } ?? .null),
            .init("invalidated_at", e.invalidatedAt.map { .string(RegistrationTime.iso8601(milliseconds: $0)) } ?? .null),
            .init("channel_id", e.broadcast ? .string(e.token) : .null),
            .init("variant", e.variant.map(JSONValue.string) ?? .null),
            .init("rollout", e.rollout.map(JSONValue.bool) ?? .null),
            .init("app", e.app.map(JSONValue.string) ?? .null),
            .init("environment", e.environment.map(JSONValue.string) ?? .null),
        ]
        JSONValue.object(members).write(to: &out)
        out.append(UInt8(ascii: "\n"))
    }

    /// docs/events.md: a value the recipient does not have (no reason for a sent push, no id in a
    /// broadcast) is `null`, not an empty string.
    private static func nonEmpty(_ s: String) -> JSONValue { s.isEmpty ? .null : .string(s) }
}
