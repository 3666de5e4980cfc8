// Why this renderer is hand-written on bytes: a campaign renders one payload per recipient,
// millions per run. Building a dictionary and calling JSONSerialization per recipient costs
// microseconds each and shuffles key order. Instead each template is validated and compiled
// once per job into pre-encoded byte chunks and placeholder slots (`RenderOp`), and `render`
// only appends bytes to one buffer the caller can reuse: literal chunks by memcpy, field text
// through a scan-then-copy escaper. Non-ASCII passes through as raw UTF-8, because Apple: "The
// JSON \U notation is not supported" (https://developer.apple.com/library/archive/documentation/NetworkingInternet/Conceptual/RemoteNotificationsPG/PayloadKeyReference.html).
// Benchmarks/render_bench measures it (`make bench`).
import Foundation
import HeraldCore

/// Renders the APNs JSON payload for each recipient of a job.
///
/// Compiled once per job: template(s) parsed into literal byte chunks and placeholder slots,
/// so `render` only appends bytes. Immutable after `init`, so one instance serves all threads.
public final class PayloadRenderer: Sendable {
    private let defaultTemplate: CompiledTemplate
    private let variants: [CompiledTemplate]
    /// Locale as written and normalized (`fr-ca`) → index into `variants`.
    private let variantIndex: [String: Int]
    private let missingField: MissingFieldPolicy
    private let oversize: OversizePolicy
    /// The payload limit of the push type: 4096 bytes, 5120 for VoIP and broadcasts.
    public let limit: Int
    /// A Live Activity push: its `content-state` has the device's own limit (`ContentStateSize`).
    private let liveActivity: Bool

    /// Validates and compiles `push.template` and every `push.locales` variant, and checks the
    /// push type against the priority. Throws the first problem found; the caller exits with status 2.
    /// `section`: where the templates are written, for messages (`push`, or an experiment's
    /// `experiment.variants.b`): its `.template` and `.locales.<locale>`.
    public convenience init(push: PushSpec, section: String = "push") throws(PayloadTemplateError) {
        do {
            try self.init(checking: push, section: section)
        } catch {
            throw error.placed(by: push.templateLines)
        }
    }

    private init(checking push: PushSpec, section: String) throws(PayloadTemplateError) {
        if push.type == .background {
            if push.priority != 5 { throw .backgroundPriority(push.priority) }
            if push.priorityTemplate != nil { throw .header(key: "push.priority", problem: "must be 5 for background pushes, not a placeholder") }
        } else if let problem = push.type.priorityProblem(push.priority) {
            throw .header(key: "push.priority", problem: problem)
        }
        limit = push.broadcast != nil ? BroadcastSpec.payloadLimit : push.type.payloadLimit
        let limit = self.limit, broadcast = push.broadcast != nil
        missingField = push.missingField
        oversize = push.oversize
        liveActivity = push.type == .liveactivity
        defaultTemplate = try Self.prepare(push.template, source: "\(section).template", type: push.type, limit: limit, broadcast: broadcast)
        var variants: [CompiledTemplate] = []
        var index: [String: Int] = [:]
        for (locale, template) in push.locales {
            let normalized = Self.normalize(locale)
            guard index[normalized] == nil else { throw .duplicateLocale(locale) }
            index[normalized] = variants.count
            index[locale] = variants.count
            variants.append(try Self.prepare(template, source: "\(section).locales.\(locale)", type: push.type, limit: limit, broadcast: broadcast))
        }
        self.variants = variants
        self.variantIndex = index
    }

    /// Fields every recipient's payload needs, whatever its locale: each is a placeholder with no
    /// default in every template (`push.template` and each of `push.locales`) that
    /// `missing_field: empty` does not fill (it fills text, not a typed value). A CSV header
    /// without one would make every row invalid. Sorted by field, with where the first template uses it.
    public var fieldsEveryRowNeeds: [(column: String, usedBy: String)] {
        func needs(_ t: CompiledTemplate) -> [String: String] {
            var out: [String: String] = [:]
            for (i, slot) in t.slots.enumerated() where !slot.hasDefault && (missingField != .empty || slot.type != nil) {
                if out[t.fields[i]] == nil { out[t.fields[i]] = "\(t.source) at \(t.paths[i])" }
            }
            return out
        }
        var common = needs(defaultTemplate)
        for variant in variants {
            let other = needs(variant)
            common = common.filter { other[$0.key] != nil }
        }
        return common.sorted { $0.key < $1.key }.map { (column: $0.key, usedBy: $0.value) }
    }

    /// Renders for one recipient. `locale` is the recipient's locale text (may be nil or
    /// empty): an exact match in `push.locales` (ignoring case and `_` vs `-`), then shorter
    /// and shorter prefixes (`zh-Hant-TW` → `zh-Hant` → `zh`), else `push.template`.
    public func render(_ record: AudienceRecord, locale: String?) -> RenderOutcome {
        let template = template(for: locale)
        var out: [UInt8] = []
        out.reserveCapacity(template.minimumSize + 256)
        switch render(record, with: template, into: &out) {
        case .payload: return .payload(out)
        case .skip(let field): return .skip(field: field)
        case .failure(let reason, let field, let detail): return .failure(reason: reason, field: field, detail: detail)
        }
    }

    /// Renders into `buffer`, replacing its contents, so a caller rendering many recipients
    /// reuses one allocation. On `.payload` the buffer holds the JSON; otherwise its contents
    /// are unspecified.
    public func render(_ record: AudienceRecord, locale: String?, into buffer: inout [UInt8]) -> RenderStatus {
        buffer.removeAll(keepingCapacity: true)
        return render(record, with: template(for: locale), into: &buffer)
    }

    /// Which template a locale selects (`push.locales.fr` or `push.template`), for previews.
    public func templateSource(for locale: String?) -> String { template(for: locale).source }

    private func template(for locale: String?) -> CompiledTemplate {
        guard let locale, !locale.isEmpty, !variants.isEmpty else { return defaultTemplate }
        if let i = variantIndex[locale] { return variants[i] }
        var tag = Self.normalize(locale)
        while true {
            if let i = variantIndex[tag] { return variants[i] }
            guard let dash = tag.lastIndex(of: "-") else { return defaultTemplate }
            tag = String(tag[..<dash])
        }
    }

    private func render(_ record: AudienceRecord, with template: CompiledTemplate, into out: inout [UInt8]) -> RenderStatus {
        var bodyStart = -1
        var bodyEnd = -1
        // Unsafe buffers over the template's arrays: reading plain-data ops and slots through
        // them costs no reference counting per element.
        let problem: RenderStatus? = template.bytes.withUnsafeBufferPointer { arena in
            template.slots.withUnsafeBufferPointer { slots in
                template.fields.withUnsafeBufferPointer { fields in
                    template.ops.withUnsafeBufferPointer { ops in
                        for op in ops {
                            switch op {
                            case .literal(let start, let count):
                                out.append(contentsOf: UnsafeBufferPointer(rebasing: arena[start..<(start + count)]))
                            case .text(let k):
                                let slot = slots[k]
                                // A null or empty value is missing: an empty CSV cell must not send "Hi ,".
                                if let value = record.fields[fields[k]], !value.isBlank {
                                    Self.appendText(value, to: &out)
                                } else if slot.hasDefault {
                                    out.append(contentsOf: UnsafeBufferPointer(rebasing: arena[slot.defaultStart..<(slot.defaultStart + slot.defaultCount)]))
                                } else {
                                    switch missingField {
                                    case .empty: continue
                                    case .skipRecipient: return .skip(field: fields[k])
                                    case .error:
                                        return .failure(reason: .missingField, field: fields[k],
                                                        detail: "field \(fields[k]) is \(Self.absence(record.fields[fields[k]])) (used in \(template.paths[k]))")
                                    }
                                }
                            case .typed(let k):
                                let slot = slots[k]
                                let type = slot.type ?? .json
                                let value = record.fields[fields[k]]
                                // JSON null is a value for `:json`; for the other types it is as good as missing.
                                if let value, !value.isBlank || (type == .json && value == .null) {
                                    guard TypedValue.append(value, as: type, range: slot.range, to: &out) else {
                                        return .failure(reason: .badFieldValue, field: fields[k],
                                                        detail: "\(fields[k]) is \(TypedValue.preview(value)), not \(TypedValue.describe(type, range: slot.range)) (used in \(template.paths[k]))")
                                    }
                                } else if slot.hasDefault {
                                    out.append(contentsOf: UnsafeBufferPointer(rebasing: arena[slot.defaultStart..<(slot.defaultStart + slot.defaultCount)]))
                                } else if missingField == .skipRecipient {
                                    return .skip(field: fields[k])
                                } else {
                                    // `missing_field: empty` fills text; "" is no number, so a typed slot still fails.
                                    return .failure(reason: .missingField, field: fields[k],
                                                    detail: "field \(fields[k]) is \(Self.absence(value)) (used in \(template.paths[k]) as {{\(fields[k]):\(type.rawValue)}})")
                                }
                            case .bodyStart:
                                bodyStart = out.count
                            case .bodyEnd:
                                bodyEnd = out.count
                            case .now:
                                out.append(contentsOf: String(Int(Date().timeIntervalSince1970)).utf8)
                            }
                        }
                        return nil
                    }
                }
            }
        }
        if let problem { return problem }
        if liveActivity, let n = ContentStateSize.bytes(out), n > ContentStateSize.deviceLimit {
            return .failure(reason: .payloadTooLarge, field: "", detail: "aps.content-state is \(n) bytes; a Live Activity's content state can't "
                            + "exceed \(ContentStateSize.deviceLimit) on the device (APNs would accept it, the device would drop the update)")
        }
        if out.count <= limit { return .payload }
        let tooLarge = "payload is \(out.count) bytes; the limit is \(limit)"
        guard oversize == .truncateBody else {
            return .failure(reason: .payloadTooLarge, field: "", detail: tooLarge)
        }
        if let shortened = BodyTruncation.truncate(out, bodyStart: bodyStart, bodyEnd: bodyEnd, limit: limit) {
            out = shortened
            return .payload
        }
        let why = template.hasBody ? "shortening aps.alert.body cannot make it fit" : "there is no aps.alert.body to shorten"
        return .failure(reason: .payloadTooLarge, field: "", detail: "\(tooLarge); \(why)")
    }

    private static func absence(_ value: FieldValue?) -> String {
        switch value {
        case nil: return "missing"
        case .null?: return "null"
        default: return "empty"
        }
    }

    /// A field's text, JSON-escaped. Most values need no escaping, so scan first and copy the
    /// whole run at once; only values with quotes, backslashes or controls go byte by byte.
    @inline(__always)
    private static func appendText(_ value: FieldValue, to out: inout [UInt8]) {
        switch value {
        case .string(let s), .json(let s): appendEscaped(s, to: &out)
        case .number(let n): out.append(contentsOf: n.utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .null: break
        }
    }

    @inline(__always)
    private static func appendEscaped(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { buffer in
            for byte in buffer where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                JSONEscaping.appendEscaped(bytes: buffer, to: &out)
                return
            }
            out.append(contentsOf: buffer)
        }
    }

    private static func prepare(_ template: JSONValue, source: String, type: PushType, limit: Int,
                                broadcast: Bool) throws(PayloadTemplateError) -> CompiledTemplate {
        try TemplateValidator(source: source, pushType: type, broadcast: broadcast).validate(template)
        let compiled = try TemplateCompiler.compile(template, source: source, pushType: type)
        if compiled.minimumSize > limit {
            throw .templateTooLarge(source: source, bytes: compiled.minimumSize, limit: limit)
        }
        return compiled
    }

    /// `fr_CA`, `FR-ca` → `fr-ca`.
    static func normalize(_ locale: String) -> String {
        String(decoding: locale.utf8.map { byte -> UInt8 in
            if byte == UInt8(ascii: "_") { return UInt8(ascii: "-") }
            if byte >= UInt8(ascii: "A"), byte <= UInt8(ascii: "Z") { return byte + 32 }
            return byte
        }, as: UTF8.self)
    }
}

extension FieldValue {
    /// Null or empty text: treated as missing by placeholders.
    @inline(__always)
    var isBlank: Bool {
        switch self {
        case .null: return true
        case .string(let s): return s.isEmpty
        default: return false
        }
    }
}
