import Foundation
import HeraldCore
import HeraldPayload

/// A small order-keeping JSON parser for tests: Foundation's JSONSerialization would lose the
/// key order that templates and the round-trip tests depend on. Returns nil on bad input.
enum TestJSON {
    static func parse(_ text: String) -> JSONValue? {
        var parser = Parser(bytes: Array(text.utf8))
        guard let value = parser.value() else { return nil }
        parser.skipSpace()
        return parser.i == parser.bytes.count ? value : nil
    }

    private struct Parser {
        let bytes: [UInt8]
        var i = 0

        mutating func skipSpace() {
            while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
        }

        mutating func value() -> JSONValue? {
            skipSpace()
            guard i < bytes.count else { return nil }
            switch bytes[i] {
            case UInt8(ascii: "{"):
                i += 1
                var members: [JSONValue.Member] = []
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                while true {
                    skipSpace()
                    guard let key = string() else { return nil }
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
                    i += 1
                    guard let v = value() else { return nil }
                    members.append(JSONValue.Member(key, v))
                    skipSpace()
                    guard i < bytes.count else { return nil }
                    if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                    guard bytes[i] == UInt8(ascii: ",") else { return nil }
                    i += 1
                }
            case UInt8(ascii: "["):
                i += 1
                var items: [JSONValue] = []
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                while true {
                    guard let v = value() else { return nil }
                    items.append(v)
                    skipSpace()
                    guard i < bytes.count else { return nil }
                    if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                    guard bytes[i] == UInt8(ascii: ",") else { return nil }
                    i += 1
                }
            case UInt8(ascii: "\""):
                return string().map { .string($0) }
            case UInt8(ascii: "t"): return word("true", .bool(true))
            case UInt8(ascii: "f"): return word("false", .bool(false))
            case UInt8(ascii: "n"): return word("null", .null)
            default:
                let start = i
                while i < bytes.count, "-+.eE0123456789".utf8.contains(bytes[i]) { i += 1 }
                return i > start ? .number(String(decoding: bytes[start..<i], as: UTF8.self)) : nil
            }
        }

        mutating func word(_ w: String, _ v: JSONValue) -> JSONValue? {
            let w = Array(w.utf8)
            guard i + w.count <= bytes.count, Array(bytes[i..<(i + w.count)]) == w else { return nil }
            i += w.count
            return v
        }

        mutating func string() -> String? {
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { return nil }
            i += 1
            var raw: [UInt8] = []
            while i < bytes.count {
                let b = bytes[i]
                i += 1
                if b == UInt8(ascii: "\"") { return String(decoding: raw, as: UTF8.self) }
                guard b == UInt8(ascii: "\\") else { raw.append(b); continue }
                guard i < bytes.count else { return nil }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "n"): raw.append(0x0A)
                case UInt8(ascii: "r"): raw.append(0x0D)
                case UInt8(ascii: "t"): raw.append(0x09)
                case UInt8(ascii: "b"): raw.append(0x08)
                case UInt8(ascii: "f"): raw.append(0x0C)
                case UInt8(ascii: "u"):
                    guard i + 4 <= bytes.count,
                          let code = UInt32(String(decoding: bytes[i..<(i + 4)], as: UTF8.self), radix: 16),
                          let scalar = Unicode.Scalar(code) else { return nil }
                    raw.append(contentsOf: String(Character(scalar)).utf8)
                    i += 4
                default: raw.append(e)
                }
            }
            return nil
        }
    }
}

/// Shared fixtures for the payload tests.
enum Fixture {
    static let token = DeviceToken(trustedCanonical: String(repeating: "ab", count: 32))

    static func record(_ fields: [String: FieldValue]) -> AudienceRecord {
        AudienceRecord(location: RowLocation(file: "audience.csv", line: 2), token: token, fields: fields)
    }

    static func strings(_ fields: [String: String]) -> AudienceRecord {
        record(fields.mapValues { .string($0) })
    }

    /// A template from JSON text; tests only use well-formed literals, so a parse failure
    /// becomes an obviously wrong template instead of a crash.
    static func template(_ text: String) -> JSONValue {
        TestJSON.parse(text) ?? .string("unparseable test template")
    }

    static func push(_ template: String, type: PushType = .alert, priority: Int = 10,
                     locales: [(String, String)] = [], missingField: MissingFieldPolicy = .error,
                     oversize: OversizePolicy = .error) -> PushSpec {
        PushSpec(type: type, priority: priority, template: self.template(template),
                 locales: locales.map { (locale: $0.0, template: self.template($0.1)) },
                 missingField: missingField, oversize: oversize)
    }

    /// The payload text, or a description of the non-payload outcome (so `#expect` shows it).
    static func text(_ outcome: RenderOutcome) -> String {
        switch outcome {
        case .payload(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .skip(let field): return "skip(\(field))"
        case .failure(let reason, let field, let detail): return "failure(\(reason.rawValue), \(field), \(detail))"
        }
    }

    static func bytes(_ outcome: RenderOutcome) -> [UInt8]? {
        if case .payload(let bytes) = outcome { return bytes }
        return nil
    }

    /// Foundation's independent opinion on whether the bytes are JSON.
    static func foundationObject(_ bytes: [UInt8]) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(bytes), options: [])
    }

    static func templateError(_ push: PushSpec) -> String? {
        do throws(PayloadTemplateError) {
            _ = try PayloadRenderer(push: push)
            return nil
        } catch {
            return error.description
        }
    }
}
