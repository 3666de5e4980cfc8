import HeraldCore
import HeraldState

/// How one recipient is written in each report. Column and key names are frozen: add, never rename.
enum DeliveryFormat {
    static let deliveriesColumns = ["file", "line", "recipient_id", "token", "status", "http_status", "reason",
                                    "apns_id", "attempts", "first_attempt_at", "last_attempt_at",
                                    "apns_unique_id", "latency_ms", "invalidated_at"]
    static let unregisteredColumns = ["token", "reason", "invalidated_at", "recipient_id", "file", "line", "apns_id"]
    static let rejectedColumns = ["token", "reason", "http_status", "recipient_id", "file", "line", "apns_id", "last_attempt_at"]

    static func invalidatedText(_ d: DeliveryRow) -> String {
        d.invalidatedAt.map { RegistrationTime.iso8601(milliseconds: $0) } ?? ""
    }

    static func csv(_ d: DeliveryRow) -> String {
        CSV.line([
            d.file, String(d.line), d.recipientId, d.token, d.status.reportStatus.rawValue,
            d.httpStatus.map(String.init) ?? "", d.reason, d.apnsId, String(d.attempts),
            d.firstAttemptAt ?? "", d.lastAttemptAt ?? "",
            d.apnsUniqueId ?? "", d.latencyMs.map(String.init) ?? "", invalidatedText(d),
        ])
    }

    /// One deliveries.ndjson line: the CSV's columns as keys, numbers as numbers, absent values null.
    static func ndjson(_ d: DeliveryRow) -> String {
        func text(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        func number(_ n: Int?) -> JSONValue { n.map { .number(String($0)) } ?? .null }
        return JSONValue.object([
            .init("file", .string(d.file)), .init("line", .number(String(d.line))), .init("recipient_id", .string(d.recipientId)),
            .init("token", .string(d.token)), .init("status", .string(d.status.reportStatus.rawValue)),
            .init("http_status", number(d.httpStatus)), .init("reason", .string(d.reason)), .init("apns_id", .string(d.apnsId)),
            .init("attempts", .number(String(d.attempts))), .init("first_attempt_at", text(d.firstAttemptAt)),
            .init("last_attempt_at", text(d.lastAttemptAt)), .init("apns_unique_id", text(d.apnsUniqueId)),
            .init("latency_ms", number(d.latencyMs)), .init("invalidated_at", d.invalidatedAt == nil ? .null : .string(invalidatedText(d))),
        ]).compactText + "\n"
    }

    static func unregistered(_ d: DeliveryRow) -> String {
        CSV.line([d.token, d.reason, invalidatedText(d), d.recipientId, d.file, String(d.line), d.apnsId])
    }

    static func rejected(_ d: DeliveryRow) -> String {
        CSV.line([d.token, d.reason, d.httpStatus.map(String.init) ?? "", d.recipientId, d.file, String(d.line), d.apnsId,
                  d.lastAttemptAt ?? ""])
    }
}
