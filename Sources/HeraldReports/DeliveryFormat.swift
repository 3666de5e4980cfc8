import HeraldCore
import HeraldState

/// How one recipient is written in each report. Column and key names are frozen: add, never rename.
///
/// Hot path (one call per recipient per file): rows are appended as bytes straight into the
/// file's buffer, with no per-field String or JSON tree (that version ran at a third of the speed;
/// `Benchmarks/report_bench.py` measures it).
enum DeliveryFormat {
    static let deliveriesColumns = ["file", "line", "recipient_id", "token", "status", "http_status", "reason",
                                    "apns_id", "attempts", "first_attempt_at", "last_attempt_at",
                                    "apns_unique_id", "latency_ms", "invalidated_at"]
    static let unregisteredColumns = ["token", "reason", "invalidated_at", "recipient_id", "file", "line", "apns_id"]
    static let rejectedColumns = ["token", "reason", "http_status", "recipient_id", "file", "line", "apns_id", "last_attempt_at"]

    static func invalidatedText(_ d: DeliveryRow) -> String? {
        d.invalidatedAt.map { RegistrationTime.iso8601(milliseconds: $0) }
    }

    static func csv(_ d: DeliveryRow, to out: inout [UInt8]) {
        var w = CSVRowWriter(); defer { w.end(&out) }
        w.text(d.file, &out); w.int(d.line, &out); w.text(d.recipientId, &out); w.text(d.token, &out); w.text(d.status.reportStatus.rawValue, &out)
        w.int(d.httpStatus, &out); w.text(d.reason, &out); w.text(d.apnsId, &out); w.int(d.attempts, &out)
        w.text(d.firstAttemptAt, &out); w.text(d.lastAttemptAt, &out)
        w.text(d.apnsUniqueId, &out); w.int(d.latencyMs, &out); w.text(invalidatedText(d), &out)
    }

    /// One deliveries.ndjson line: the CSV's columns as keys, numbers as numbers, absent values null.
    static func ndjson(_ d: DeliveryRow, to out: inout [UInt8]) {
        var w = NDJSONRowWriter(&out); defer { w.end(&out) }
        w.text("file", d.file, &out); w.int("line", d.line, &out); w.text("recipient_id", d.recipientId, &out); w.text("token", d.token, &out)
        w.text("status", d.status.reportStatus.rawValue, &out); w.int("http_status", d.httpStatus, &out); w.text("reason", d.reason, &out)
        w.text("apns_id", d.apnsId, &out); w.int("attempts", d.attempts, &out); w.text("first_attempt_at", d.firstAttemptAt, &out)
        w.text("last_attempt_at", d.lastAttemptAt, &out); w.text("apns_unique_id", d.apnsUniqueId, &out); w.int("latency_ms", d.latencyMs, &out)
        w.text("invalidated_at", invalidatedText(d), &out)
    }

    static func unregistered(_ d: DeliveryRow, to out: inout [UInt8]) {
        var w = CSVRowWriter(); defer { w.end(&out) }
        w.text(d.token, &out); w.text(d.reason, &out); w.text(invalidatedText(d), &out); w.text(d.recipientId, &out); w.text(d.file, &out); w.int(d.line, &out); w.text(d.apnsId, &out)
    }

    static func rejected(_ d: DeliveryRow, to out: inout [UInt8]) {
        var w = CSVRowWriter(); defer { w.end(&out) }
        w.text(d.token, &out); w.text(d.reason, &out); w.int(d.httpStatus, &out); w.text(d.recipientId, &out); w.text(d.file, &out); w.int(d.line, &out); w.text(d.apnsId, &out)
        w.text(d.lastAttemptAt, &out)
    }
}

/// Appends the fields of one CSV row (RFC 4180 quoting: a field with a comma, quote, CR or LF is
/// quoted, quotes doubled); each field is followed by a comma, the last one replaced by the newline.
struct CSVRowWriter {
    mutating func text(_ s: String?, _ out: inout [UInt8]) {
        if var s {
            s.withUTF8 { bytes in
                if bytes.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) {
                    out.append(UInt8(ascii: "\""))
                    for b in bytes {
                        if b == 0x22 { out.append(0x22) }
                        out.append(b)
                    }
                    out.append(UInt8(ascii: "\""))
                } else {
                    out.append(contentsOf: bytes)
                }
            }
        }
        out.append(UInt8(ascii: ","))
    }

    mutating func int(_ n: Int?, _ out: inout [UInt8]) {
        if let n { DecimalDigits.append(n, to: &out) }
        out.append(UInt8(ascii: ","))
    }

    func end(_ out: inout [UInt8]) { out[out.count - 1] = 0x0A }
}

/// Appends one NDJSON object, keys in call order; each member is followed by a comma, the last
/// one replaced by the closing brace.
struct NDJSONRowWriter {
    init(_ out: inout [UInt8]) { out.append(UInt8(ascii: "{")) }

    private func key(_ k: StaticString, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: UnsafeBufferPointer(start: k.utf8Start, count: k.utf8CodeUnitCount))
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }

    mutating func text(_ k: StaticString, _ s: String?, _ out: inout [UInt8]) {
        key(k, &out)
        if let s { JSONEscaping.appendQuoted(s, to: &out) } else { out.append(contentsOf: "null".utf8) }
        out.append(UInt8(ascii: ","))
    }

    mutating func int(_ k: StaticString, _ n: Int?, _ out: inout [UInt8]) {
        key(k, &out)
        if let n { DecimalDigits.append(n, to: &out) } else { out.append(contentsOf: "null".utf8) }
        out.append(UInt8(ascii: ","))
    }

    func end(_ out: inout [UInt8]) {
        out[out.count - 1] = UInt8(ascii: "}")
        out.append(0x0A)
    }
}
