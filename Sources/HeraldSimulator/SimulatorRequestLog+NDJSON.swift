import Foundation
import HeraldCore

/// The NDJSON request log's lines, written on bytes with HeraldCore's escaping (one line per
/// request on the simulator's hot path).
///
/// Request line: `time_ms, connection, stream, method, path, token, headers{apns-*, authorization
/// redacted}, jwt_kid, jwt_iss, jwt_iat, auth, client_cn, topic, body, status, reason, timestamp,
/// apns_id, apns_unique_id, outcome, fault`.
/// Final line of `herald sim`: `{"stats":{requests, answered, connections, by_status, by_reason, by_fault,
/// peak_awaiting_latency, pings}, "time_ms"}`.
struct NDJSONWriter {
    var out: [UInt8] = []
    private var first = true

    init(capacity: Int) {
        out.reserveCapacity(capacity)
        out.append(UInt8(ascii: "{"))
    }

    mutating func key(_ k: StaticString) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: UnsafeBufferPointer(start: k.utf8Start, count: k.utf8CodeUnitCount))
        out.append(contentsOf: "\":".utf8)
    }

    mutating func string(_ k: StaticString, _ v: String?) {
        key(k)
        if let v { JSONEscaping.appendQuoted(v, to: &out) } else { out.append(contentsOf: "null".utf8) }
    }

    mutating func number(_ k: StaticString, _ v: Int?) {
        key(k)
        out.append(contentsOf: (v.map(String.init) ?? "null").utf8)
    }

    /// A flat object of string keys to preformatted values.
    mutating func object(_ k: StaticString, _ pairs: [(String, [UInt8])]) {
        key(k)
        out.append(UInt8(ascii: "{"))
        for (i, (name, value)) in pairs.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONEscaping.appendQuoted(name, to: &out)
            out.append(UInt8(ascii: ":"))
            out.append(contentsOf: value)
        }
        out.append(UInt8(ascii: "}"))
    }

    mutating func raw(_ k: StaticString, _ bytes: [UInt8]) {
        key(k)
        out.append(contentsOf: bytes)
    }

    mutating func finish() -> [UInt8] {
        out.append(contentsOf: "}\n".utf8)
        return out
    }

    static func quoted(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        JSONEscaping.appendQuoted(s, to: &out)
        return out
    }

    static func counts<K>(_ d: [K: Int], _ name: (K) -> String) -> [(String, [UInt8])] {
        d.map { (name($0.key), Array(String($0.value).utf8)) }.sorted { $0.0 < $1.0 }
    }
}

extension SimulatorRequestLog.Entry {
    /// One NDJSON line (with the trailing newline).
    func ndjsonLine(at time: Date) -> [UInt8] {
        var w = NDJSONWriter(capacity: 384 + body.count)
        w.number("time_ms", Int(time.timeIntervalSince1970 * 1000))
        w.number("connection", connection)
        w.number("stream", stream)
        w.string("method", method)
        w.string("path", path)
        w.string("token", token)
        w.object("headers", headers.sorted { $0.key < $1.key }.map { ($0.key, NDJSONWriter.quoted($0.value)) })
        w.string("jwt_kid", jwtKid)
        w.string("jwt_iss", jwtIss)
        w.number("jwt_iat", jwtIat)
        w.string("auth", auth)
        w.string("client_cn", clientCommonName)
        w.string("topic", topic)
        w.string("body", String(decoding: body, as: UTF8.self))
        w.number("status", status)
        w.string("reason", reason)
        w.number("timestamp", timestamp)
        w.string("apns_id", apnsId)
        w.string("apns_unique_id", uniqueId)
        w.string("outcome", outcome.rawValue)
        w.string("fault", fault)
        return w.finish()
    }
}

extension SimulatorRequestLog.Stats {
    /// The final stats line.
    func ndjsonLine(at time: Date) -> [UInt8] {
        var inner = NDJSONWriter(capacity: 256)
        inner.number("requests", requests)
        inner.number("answered", answered)
        inner.number("connections", connections)
        inner.object("by_status", NDJSONWriter.counts(byStatus) { String($0) })
        inner.object("by_reason", NDJSONWriter.counts(byReason) { $0 })
        inner.object("by_fault", NDJSONWriter.counts(byFault) { $0 })
        inner.number("peak_awaiting_latency", peakAwaitingLatency)
        inner.number("pings", pings)
        var stats = inner.finish()
        stats.removeLast()  // the newline
        var w = NDJSONWriter(capacity: stats.count + 32)
        w.raw("stats", stats)
        w.number("time_ms", Int(time.timeIntervalSince1970 * 1000))
        return w.finish()
    }
}
