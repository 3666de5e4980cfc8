import HeraldCore
import HeraldState
import Synchronization

/// How one recipient is written in each report. Column and key names are frozen: add, never rename.
///
/// Hot path (one call per recipient per file): rows are appended as bytes straight into the
/// file's buffer, with no per-field String or JSON tree (`Benchmarks/report_bench.py` measures it).
enum DeliveryFormat {
    static let deliveriesColumns = ["file", "line", "recipient_id", "token", "status", "http_status", "reason",
                                    "apns_id", "attempts", "first_attempt_at", "last_attempt_at",
                                    "apns_unique_id", "latency_ms", "invalidated_at", "timezone", "due_at", "channel_id",
                                    "variant", "rollout", "app", "environment"]
    static let unregisteredColumns = ["token", "reason", "invalidated_at", "recipient_id", "file", "line", "apns_id", "app", "environment"]
    static let holdoutColumns = ["recipient_id", "token", "file", "line"]
    static let rejectedColumns = ["token", "reason", "http_status", "recipient_id", "file", "line", "apns_id", "last_attempt_at", "app", "environment"]

    static func invalidatedText<D: DeliveryFields>(_ d: D) -> String? {
        d.invalidatedAt.map { RegistrationTime.iso8601(milliseconds: $0) }
    }

    /// `due_at` as text. Every recipient of a zone shares its due time, so a campaign has a few
    /// hundred of them: each is formatted once (for both deliveries files) and looked up after.
    static func dueText<D: DeliveryFields>(_ d: D) -> String? {
        guard let due = d.dueAt else { return nil }
        let ms = Int64((due * 1000).rounded())
        if let known = dueTexts.withLock({ $0[ms] }) { return known }
        let text = RegistrationTime.iso8601(milliseconds: ms)
        dueTexts.withLock { if $0.count < 4_096 { $0[ms] = text } }
        return text
    }
    private static let dueTexts = Mutex<[Int64: String]>([:])

    /// `broadcast`: the row is a channel (`DeviceToken(broadcastChannel:)`), written as `channel_id`, `token` empty.
    static func csv<D: DeliveryFields>(_ d: D, broadcast: Bool = false, to out: inout RowBuffer) {
        var w = CSVRowWriter(); defer { w.end(&out) }
        w.text(d, .file, &out); w.int(d.line, &out); w.text(d, .recipientId, &out)
        if broadcast { w.string(nil, &out) } else { w.text(d, .token, &out) }
        w.status(d.status, &out); w.int(d.httpStatus, &out); w.text(d, .reason, &out); w.text(d, .apnsId, &out); w.int(d.attempts, &out)
        w.text(d, .firstAttemptAt, &out); w.text(d, .lastAttemptAt, &out)
        w.text(d, .apnsUniqueId, &out); w.int(d.latencyMs, &out); w.string(invalidatedText(d), &out)
        w.text(d, .timezone, &out); w.string(dueText(d), &out)
        if broadcast { w.text(d, .token, &out) } else { w.string(nil, &out) }
        w.text(d, .variant, &out); w.int(d.rollout.map { $0 ? 1 : 0 }, &out)
        w.route(d, &out)
    }

    /// One deliveries.ndjson line: the CSV's columns as keys, numbers as numbers, absent values null.
    static func ndjson<D: DeliveryFields>(_ d: D, broadcast: Bool = false, to out: inout RowBuffer) {
        var w = NDJSONRowWriter(&out); defer { w.end(&out) }
        w.text("\"file\":", d, .file, &out); w.int("\"line\":", d.line, &out); w.text("\"recipient_id\":", d, .recipientId, &out)
        if broadcast { w.string("\"token\":", nil, &out) } else { w.text("\"token\":", d, .token, &out) }
        w.status("\"status\":", d.status, &out); w.int("\"http_status\":", d.httpStatus, &out)
        w.text("\"reason\":", d, .reason, &out); w.text("\"apns_id\":", d, .apnsId, &out); w.int("\"attempts\":", d.attempts, &out)
        w.text("\"first_attempt_at\":", d, .firstAttemptAt, &out); w.text("\"last_attempt_at\":", d, .lastAttemptAt, &out)
        w.text("\"apns_unique_id\":", d, .apnsUniqueId, &out); w.int("\"latency_ms\":", d.latencyMs, &out)
        w.string("\"invalidated_at\":", invalidatedText(d), &out)
        w.text("\"timezone\":", d, .timezone, &out); w.string("\"due_at\":", dueText(d), &out)
        if broadcast { w.text("\"channel_id\":", d, .token, &out) } else { w.string("\"channel_id\":", nil, &out) }
        w.text("\"variant\":", d, .variant, &out); w.bool("\"rollout\":", d.rollout, &out)
        w.route(d, &out)
    }

    static func unregistered<D: DeliveryFields>(_ d: D, to out: inout RowBuffer) {
        var w = CSVRowWriter(); defer { w.end(&out) }
        w.text(d, .token, &out); w.text(d, .reason, &out); w.string(invalidatedText(d), &out); w.text(d, .recipientId, &out)
        w.text(d, .file, &out); w.int(d.line, &out); w.text(d, .apnsId, &out)
        w.route(d, &out)
    }

    static func holdout<D: DeliveryFields>(_ d: D, to out: inout RowBuffer) {
        var w = CSVRowWriter(); defer { w.end(&out) }
        w.text(d, .recipientId, &out); w.text(d, .token, &out); w.text(d, .file, &out); w.int(d.line, &out)
    }

    static func rejected<D: DeliveryFields>(_ d: D, to out: inout RowBuffer) {
        var w = CSVRowWriter(); defer { w.end(&out) }
        w.text(d, .token, &out); w.text(d, .reason, &out); w.int(d.httpStatus, &out); w.text(d, .recipientId, &out); w.text(d, .file, &out)
        w.int(d.line, &out); w.text(d, .apnsId, &out); w.text(d, .lastAttemptAt, &out)
        w.route(d, &out)
    }
}

/// What a report row is written from: a row straight from the state file (`DeliveryColumns`),
/// or one read back from a shard's deliveries.ndjson when merging (`DeliveryRow`).
protocol DeliveryFields {
    var line: Int { get }
    var status: StoredStatus { get }
    var httpStatus: Int? { get }
    var attempts: Int { get }
    var invalidatedAt: Int64? { get }
    var latencyMs: Int? { get }
    var dueAt: Double? { get }
    var rollout: Bool? { get }
    /// `body` sees the text column's UTF-8 bytes, nil when it is absent.
    func withText<R>(_ t: DeliveryColumns.Text, _ body: (UnsafeRawBufferPointer?) -> R) -> R
}

extension DeliveryColumns: DeliveryFields {
    func withText<R>(_ t: DeliveryColumns.Text, _ body: (UnsafeRawBufferPointer?) -> R) -> R { body(text(t)) }
}

extension DeliveryRow: DeliveryFields {
    func withText<R>(_ t: DeliveryColumns.Text, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
        guard var text = text(t) else { return body(nil) }
        return text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
    }
}

/// Appends the fields of one CSV row (RFC 4180 quoting: a field with a comma, quote, CR or LF is
/// quoted, quotes doubled); each field is followed by a comma, the last one replaced by the newline.
struct CSVRowWriter {
    mutating func text<D: DeliveryFields>(_ d: D, _ t: DeliveryColumns.Text, _ out: inout RowBuffer) {
        d.withText(t) { bytes($0, &out) }
    }

    mutating func string(_ s: String?, _ out: inout RowBuffer) {
        guard var s else { return bytes(nil, &out) }
        s.withUTF8 { bytes(UnsafeRawBufferPointer($0), &out) }
    }

    /// The `app` and `environment` cells: both empty, at once, for a run for one app in one
    /// environment (most rows of most reports).
    mutating func route<D: DeliveryFields>(_ d: D, _ out: inout RowBuffer) {
        guard d.withText(.app, { $0 != nil }) || d.withText(.environment, { $0 != nil }) else {
            out.reserve(2)
            out.put(",,")
            return
        }
        text(d, .app, &out); text(d, .environment, &out)
    }

    mutating func status(_ s: StoredStatus, _ out: inout RowBuffer) {
        out.reserve(12)
        out.put(s.reportStatus.text)
        out.put(UInt8(ascii: ","))
    }

    private func bytes(_ field: UnsafeRawBufferPointer?, _ out: inout RowBuffer) {
        guard let field else {
            out.reserve(1)
            return out.put(UInt8(ascii: ","))
        }
        out.reserve(2 * field.count + 3)
        if ByteScan.needsCSVQuotes(field) {
            out.put(UInt8(ascii: "\""))
            for b in field {
                if b == 0x22 { out.put(0x22) }
                out.put(b)
            }
            out.put(UInt8(ascii: "\""))
        } else {
            out.put(field)
        }
        out.put(UInt8(ascii: ","))
    }

    mutating func int(_ n: Int?, _ out: inout RowBuffer) {
        out.reserve(21)
        if let n { out.putDecimal(n) }
        out.put(UInt8(ascii: ","))
    }

    func end(_ out: inout RowBuffer) { out.replaceLast(with: 0x0A) }
}

/// Appends one NDJSON object, members in call order. Each key is passed as its whole JSON text
/// (`"file":`), one copy; each member is followed by a comma, the last one replaced by the
/// closing brace.
struct NDJSONRowWriter {
    init(_ out: inout RowBuffer) {
        out.reserve(1)
        out.put(UInt8(ascii: "{"))
    }

    mutating func text<D: DeliveryFields>(_ key: StaticString, _ d: D, _ t: DeliveryColumns.Text, _ out: inout RowBuffer) {
        d.withText(t) { member(key, $0, &out) }
    }

    mutating func string(_ key: StaticString, _ s: String?, _ out: inout RowBuffer) {
        guard var s else { return member(key, nil, &out) }
        s.withUTF8 { member(key, UnsafeRawBufferPointer($0), &out) }
    }

    /// `app` and `environment`: both null, as one text, for a run for one app in one environment.
    mutating func route<D: DeliveryFields>(_ d: D, _ out: inout RowBuffer) {
        guard d.withText(.app, { $0 != nil }) || d.withText(.environment, { $0 != nil }) else {
            let both: StaticString = "\"app\":null,\"environment\":null,"
            out.reserve(both.utf8CodeUnitCount)
            out.put(both)
            return
        }
        text("\"app\":", d, .app, &out); text("\"environment\":", d, .environment, &out)
    }

    mutating func status(_ key: StaticString, _ s: StoredStatus, _ out: inout RowBuffer) {
        out.reserve(key.utf8CodeUnitCount + 14)
        out.put(key)
        out.put(UInt8(ascii: "\""))
        out.put(s.reportStatus.text)
        out.put(UInt8(ascii: "\""))
        out.put(UInt8(ascii: ","))
    }

    private func member(_ key: StaticString, _ value: UnsafeRawBufferPointer?, _ out: inout RowBuffer) {
        // Escaped, a byte takes at most six (\u00XX).
        out.reserve(key.utf8CodeUnitCount + 6 * (value?.count ?? 0) + 6)
        out.put(key)
        // docs/reports.md: "empty values null", as in the CSV's empty cells.
        if let value, !value.isEmpty {
            out.put(UInt8(ascii: "\""))
            out.putJSONEscaped(value)
            out.put(UInt8(ascii: "\""))
        } else {
            out.put("null")
        }
        out.put(UInt8(ascii: ","))
    }

    mutating func int(_ key: StaticString, _ n: Int?, _ out: inout RowBuffer) {
        out.reserve(key.utf8CodeUnitCount + 22)
        out.put(key)
        if let n { out.putDecimal(n) } else { out.put("null") }
        out.put(UInt8(ascii: ","))
    }

    mutating func bool(_ key: StaticString, _ b: Bool?, _ out: inout RowBuffer) {
        out.reserve(key.utf8CodeUnitCount + 7)
        out.put(key)
        switch b {
        case true?: out.put("true")
        case false?: out.put("false")
        case nil: out.put("null")
        }
        out.put(UInt8(ascii: ","))
    }

    func end(_ out: inout RowBuffer) {
        out.replaceLast(with: UInt8(ascii: "}"))
        out.reserve(1)
        out.put(0x0A)
    }
}

extension RecipientStatus {
    /// The status as report text, without a String.
    var text: StaticString {
        switch self {
        case .pending: "pending"
        case .sent: "sent"
        case .failed: "failed"
        case .suppressed: "suppressed"
        case .throttled: "throttled"
        case .cancelled: "cancelled"
        case .heldOut: "held_out"
        case .awaitingWinner: "awaiting_winner"
        }
    }
}
