import HeraldCore

/// Conversions for typed placeholders (`{{unread:int}}`, `:number`, `:bool`, `:json`).
/// CSV rows only have strings, so text that spells a value of the wanted type is accepted;
/// NDJSON rows keep their JSON types and mostly pass straight through.
enum TypedValue {
    /// Appends `value` as JSON of `type`, within `range` when one is given. Returns false when
    /// it does not convert (the caller reports `bad_field_value`), leaving `out` possibly
    /// extended: callers abandon it then.
    @inline(__always)
    static func append(_ value: FieldValue, as type: ValueType, range: ClosedRange<Double>?, to out: inout [UInt8]) -> Bool {
        guard let range else { return append(value, as: type, to: &out) }
        let start = out.count
        guard append(value, as: type, to: &out) else { return false }
        // Non-negative integers (badge): the sign is enough, no float parse per row.
        if range.lowerBound == 0, range.upperBound == .greatestFiniteMagnitude, type == .int {
            return out[start] != UInt8(ascii: "-")
        }
        guard let number = Double(String(decoding: out[start...], as: UTF8.self)) else { return false }
        return range.contains(number)
    }

    /// "a non-negative int", "a number from 0 to 1", "a bool": completes "… is not".
    static func describe(_ type: ValueType, range: ClosedRange<Double>?) -> String {
        let noun = type == .int ? "int" : type.rawValue
        guard let range else { return type == .int ? "an int" : "a \(noun)" }
        if range.upperBound == .greatestFiniteMagnitude { return "a non-negative \(noun)" }
        func text(_ d: Double) -> String { d == d.rounded() ? String(Int(d)) : String(d) }
        return "a \(noun) from \(text(range.lowerBound)) to \(text(range.upperBound))"
    }

    private static func append(_ value: FieldValue, as type: ValueType, to out: inout [UInt8]) -> Bool {
        switch (type, value) {
        case (.json, .json(let text)), (.json, .number(let text)), (.number, .number(let text)):
            // Both come from a JSON parser already, so they are valid JSON as they stand.
            out.append(contentsOf: text.utf8)
            return true
        case (.json, .bool(let b)), (.bool, .bool(let b)):
            out.append(contentsOf: b ? trueBytes : falseBytes)
            return true
        case (.json, .null):
            out.append(contentsOf: nullBytes)
            return true
        case (_, .null), (.int, .bool), (.number, .bool), (.int, .json), (.number, .json), (.bool, .json):
            return false
        case (.int, .string(let text)), (.int, .number(let text)):
            return appendInt(text, to: &out)
        case (.number, .string(let text)):
            return appendNumber(text, to: &out)
        case (_, .string(let text)), (.bool, .number(let text)):
            guard let bytes = convert(text: text, to: type) else { return false }
            out.append(contentsOf: bytes)
            return true
        }
    }

    /// `" 007 "` → `7`, `"+5"` → `5`, `"-0"` → `0`: what `Int(text)` accepts after trimming, in
    /// canonical form, straight into `out` (the per-row path; `convert` would allocate twice).
    @inline(__always)
    static func appendInt(_ text: String, to out: inout [UInt8]) -> Bool {
        withTrimmedUTF8(text) { b -> Bool in
            var i = 0
            let end = b.count
            var negative = false
            if i < end, b[i] == UInt8(ascii: "-") || b[i] == UInt8(ascii: "+") { negative = b[i] == UInt8(ascii: "-"); i += 1 }
            guard i < end else { return false }
            var value: UInt64 = 0
            while i < end {
                let d = b[i] &- 0x30
                guard d <= 9 else { return false }
                let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(d))
                guard !o1, !o2 else { return false }
                value = sum
                i += 1
            }
            // Int's range: up to 2^63 - 1, down to -2^63.
            guard value <= UInt64(Int.max) + (negative ? 1 : 0) else { return false }
            if negative && value != 0 { out.append(UInt8(ascii: "-")) }
            let start = out.count
            repeat {
                out.append(0x30 + UInt8(value % 10))
                value /= 10
            } while value > 0
            out[start...].reverse()
            return true
        }
    }

    /// A JSON number after trimming (`-1.5e3`; not `+1`, `01`, `.5`), copied into `out`.
    @inline(__always)
    static func appendNumber(_ text: String, to out: inout [UInt8]) -> Bool {
        withTrimmedUTF8(text) { trimmed -> Bool in
            guard JSONTextValidator.isNumber(trimmed) else { return false }
            out.append(contentsOf: trimmed)
            return true
        }
    }

    /// `body` sees `text`'s UTF-8 bytes without leading and trailing spaces and tabs (what a CSV
    /// export pads numbers with), in place: no copy of the text per row.
    @inline(__always)
    private static func withTrimmedUTF8(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        var text = text
        return text.withUTF8 { b -> Bool in
            var start = 0
            var end = b.count
            while start < end, b[start] == 0x20 || b[start] == 0x09 { start += 1 }
            while end > start, b[end - 1] == 0x20 || b[end - 1] == 0x09 { end -= 1 }
            return body(UnsafeBufferPointer(rebasing: b[start..<end]))
        }
    }

    /// The JSON text `text` stands for as `type`, or nil. Used for CSV strings and for defaults.
    static func convert(text: String, to type: ValueType) -> [UInt8]? {
        let trimmed = text.trimmingASCII(" \t")
        switch type {
        case .int:
            guard let n = Int(trimmed) else { return nil }
            return Array(String(n).utf8)
        case .number:
            let bytes = Array(trimmed.utf8)
            return JSONTextValidator.isNumber(bytes) ? bytes : nil
        case .bool:
            switch trimmed.lowercased() {
            case "true", "1": return trueBytes
            case "false", "0": return falseBytes
            default: return nil
            }
        case .json:
            let bytes = Array(trimmed.utf8)
            return JSONTextValidator.isValid(bytes) ? bytes : nil
        }
    }

    /// What a row value looks like in a `bad_field_value` detail: quoted, shortened, one line.
    static func preview(_ value: FieldValue) -> String {
        var text = value.text
        if text.unicodeScalars.count > 40 { text = String(text.unicodeScalars.prefix(40)) + "…" }
        var out: [UInt8] = []
        JSONEscaping.appendQuoted(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static let trueBytes = Array("true".utf8)
    private static let falseBytes = Array("false".utf8)
    private static let nullBytes = Array("null".utf8)
}

extension String {
    /// Foundation-free trim of the given ASCII characters at both ends.
    func trimmingASCII(_ set: String) -> String {
        var sub = Substring(self)
        while let f = sub.first, set.contains(f) { sub = sub.dropFirst() }
        while let l = sub.last, set.contains(l) { sub = sub.dropLast() }
        return String(sub)
    }
}
