import Foundation
import HeraldCore
public import Logging

/// `--log-format text|json`: herald's swift-log handler, on stderr (stdout carries the summary).
///
/// Text is for people: `2026-11-22T09:00:03.120Z notice  starting run … campaign=spring-sale`.
/// JSON is for collectors (Loki, Fluent Bit, CloudWatch): one object per line with `time`, `level`,
/// `label`, `message` and the metadata as top-level string fields, so a query can filter on
/// `campaign` or `shard` without parsing the message. Every message and metadata value passes
/// through `LogRedaction` first.
public struct HeraldLogHandler: LogHandler {
    public enum Format: String, Sendable, CaseIterable { case text, json }

    public var logLevel: Logger.Level = .notice
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let format: Format
    let redaction: LogRedaction
    let console: Console

    public init(label: String, format: Format, redaction: LogRedaction, console: Console = .standardError) {
        self.label = label
        self.format = format
        self.redaction = redaction
        self.console = console
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let own = event.metadata { all.merge(own) { _, new in new } }
        console.writeLine(render(level: event.level, message: event.message.description, metadata: all, at: Date()))
    }

    /// One log line, without its newline.
    func render(level: Logger.Level, message: String, metadata: Logger.Metadata, at date: Date) -> String {
        let time = Self.timestamp(date)
        let fields = metadata.sorted { $0.key < $1.key }.map { ($0.key, redaction.apply(Self.text($0.value))) }
        let message = redaction.apply(message)
        switch format {
        case .text:
            let level = level.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)
            let tail = fields.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
            return "\(time) \(level)\(message)" + (tail.isEmpty ? "" : "  " + tail)
        case .json:
            var out = "{\"time\":\(JSONText.quote(time)),\"level\":\(JSONText.quote(level.rawValue)),"
                + "\"label\":\(JSONText.quote(label)),\"message\":\(JSONText.quote(message))"
            for (key, value) in fields where !["time", "level", "label", "message"].contains(key) {
                out += ",\(JSONText.quote(key)):\(JSONText.quote(value))"
            }
            return out + "}"
        }
    }

    static func text(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let s): return s
        case .stringConvertible(let c): return c.description
        case .array(let a): return "[" + a.map(text).joined(separator: ", ") + "]"
        case .dictionary(let d): return "{" + d.sorted { $0.key < $1.key }.map { "\($0.key): \(text($0.value))" }.joined(separator: ", ") + "}"
        }
    }

    /// RFC 3339 UTC with milliseconds: sortable, and what collectors parse without configuration.
    static func timestamp(_ date: Date) -> String {
        let ms = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var t = time_t(ms / 1000)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(ms % 1000))
    }
}

/// A JSON string literal, with HeraldCore's one escaper.
enum JSONText {
    static func quote(_ s: String) -> String {
        var out: [UInt8] = []
        JSONEscaping.appendQuoted(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
