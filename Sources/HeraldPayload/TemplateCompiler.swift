import HeraldCore

/// Turns a template `JSONValue` into `RenderOp`s: everything that does not depend on the row
/// is encoded to bytes once, here, and adjacent literal bytes are merged into one chunk.
struct TemplateCompiler {
    let source: String
    let pushType: PushType
    private var ops: [RenderOp] = []
    private var bytes: [UInt8] = []
    private var slots: [Slot] = []
    private var fields: [String] = []
    private var paths: [String] = []
    private var pending: [UInt8] = []
    private var hasBody = false

    init(source: String, pushType: PushType) { self.source = source; self.pushType = pushType }

    static func compile(_ template: JSONValue, source: String, pushType: PushType) throws(PayloadTemplateError) -> CompiledTemplate {
        var compiler = TemplateCompiler(source: source, pushType: pushType)
        try compiler.emit(template, path: "")
        compiler.flush()
        var minimum = 0
        for op in compiler.ops {
            switch op {
            case .literal(_, let count): minimum += count
            case .typed: minimum += 1
            case .now: minimum += 10
            case .text, .bodyStart, .bodyEnd: break
            }
        }
        return CompiledTemplate(source: source, ops: compiler.ops, bytes: compiler.bytes, slots: compiler.slots,
                                fields: compiler.fields, paths: compiler.paths, minimumSize: minimum, hasBody: compiler.hasBody)
    }

    /// Maps a placeholder syntax problem to the job-level error, with source and path.
    static func error(_ problem: PlaceholderProblem, source: String, path: String) -> PayloadTemplateError {
        switch problem {
        case .unterminated: return .unterminatedPlaceholder(source: source, path: path)
        case .bad(let message): return .badPlaceholder(source: source, path: path, problem: message)
        }
    }

    private mutating func emit(_ value: JSONValue, path: String) throws(PayloadTemplateError) {
        switch value {
        case .null, .bool:
            value.write(to: &pending)
        case .number(let text):
            pending.append(contentsOf: try Self.jsonNumber(text, source: source, path: path))
        case .string(let text):
            try emitString(text, path: path)
        case .array(let items):
            pending.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { pending.append(UInt8(ascii: ",")) }
                try emit(item, path: "\(path)[\(i)]")
            }
            pending.append(UInt8(ascii: "]"))
        case .object(let members):
            pending.append(UInt8(ascii: "{"))
            for (i, member) in members.enumerated() {
                if i > 0 { pending.append(UInt8(ascii: ",")) }
                JSONEscaping.appendQuoted(member.key, to: &pending)
                pending.append(UInt8(ascii: ":"))
                try emit(member.value, path: path.isEmpty ? member.key : "\(path).\(member.key)")
            }
            pending.append(UInt8(ascii: "}"))
        }
    }

    private mutating func emitString(_ text: String, path: String) throws(PayloadTemplateError) {
        if path == "aps.timestamp", text == TemplateValidator.autoTimestamp, pushType == .liveactivity {
            flush()
            ops.append(.now)
            return
        }
        let segments: [StringSegment]
        do throws(PlaceholderProblem) { segments = try PlaceholderSyntax.parse(text) } catch {
            throw Self.error(error, source: source, path: path)
        }
        if let p = PlaceholderSyntax.wholeTyped(segments), let type = p.type {
            let range = APSRules.range(path: path, pushType: pushType)
            var defaultBytes: [UInt8]?
            if let text = p.defaultText {
                var bytes: [UInt8] = []
                guard TypedValue.append(.string(text), as: type, range: range, to: &bytes) else {
                    throw .badPlaceholder(source: source, path: path,
                                          problem: "default \"\(text)\" of {{\(p.field):\(type.rawValue)}} is not \(TypedValue.describe(type, range: range))")
                }
                defaultBytes = bytes
            }
            addSlot(field: p.field, type: type, defaultBytes: defaultBytes, range: range, path: path) { .typed(slot: $0) }
            return
        }
        let isBody = path == "aps.alert" || path == "aps.alert.body"
        pending.append(UInt8(ascii: "\""))
        if isBody { flush(); ops.append(.bodyStart); hasBody = true }
        for segment in segments {
            switch segment {
            case .literal(let s):
                JSONEscaping.appendEscaped(s, to: &pending)
            case .placeholder(let p):
                let escaped = p.defaultText.map { d -> [UInt8] in
                    var bytes: [UInt8] = []
                    JSONEscaping.appendEscaped(d, to: &bytes)
                    return bytes
                }
                addSlot(field: p.field, type: nil, defaultBytes: escaped, range: nil, path: path) { .text(slot: $0) }
            }
        }
        if isBody { flush(); ops.append(.bodyEnd) }
        pending.append(UInt8(ascii: "\""))
    }

    /// A number literal as JSON allows it. YAML accepts `+1`, `.5` and `1_000`, JSON does not:
    /// integers are rewritten in canonical form, other finite numbers through `Double`.
    static func jsonNumber(_ text: String, source: String, path: String) throws(PayloadTemplateError) -> [UInt8] {
        let bytes = Array(text.utf8)
        if JSONTextValidator.isNumber(bytes) { return bytes }
        if let i = Int(text.replacingUnderscores) { return Array(String(i).utf8) }
        if let d = Double(text.replacingUnderscores), d.isFinite { return Array(String(d).utf8) }
        throw .wrongValue(source: source, path: path, expected: "a JSON number, not \(text)")
    }

    private mutating func addSlot(field: String, type: ValueType?, defaultBytes: [UInt8]?, range: ClosedRange<Double>?,
                                  path: String, op: (Int) -> RenderOp) {
        flush()
        ops.append(op(slots.count))
        let start = bytes.count
        if let defaultBytes { bytes.append(contentsOf: defaultBytes) }
        slots.append(Slot(type: type, defaultStart: start, defaultCount: defaultBytes?.count ?? -1, range: range))
        fields.append(field)
        paths.append(path)
    }

    private mutating func flush() {
        guard !pending.isEmpty else { return }
        ops.append(.literal(start: bytes.count, count: pending.count))
        bytes.append(contentsOf: pending)
        pending.removeAll(keepingCapacity: true)
    }
}

private extension String {
    var replacingUnderscores: String { String(unicodeScalars.filter { $0 != "_" }) }
}
