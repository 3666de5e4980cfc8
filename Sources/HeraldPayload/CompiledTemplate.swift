import HeraldCore

/// One step of rendering. A template compiles to a flat list of these so that `render` is a
/// loop of byte appends and dictionary lookups, with no tree walk and no JSON encoder. Every
/// case is plain data (offsets and indices, no references), so walking the list costs no
/// reference counting, which would cost more than the copying itself.
enum RenderOp: Sendable {
    /// Pre-encoded JSON bytes (punctuation, keys, literal values, escaped literal text):
    /// `count` bytes of the template's `bytes` from `start`.
    case literal(start: Int, count: Int)
    /// A placeholder inside a JSON string: the field's text, JSON-escaped.
    case text(slot: Int)
    /// A whole-value typed placeholder: the field's value as a JSON number, bool or value.
    case typed(slot: Int)
    /// Marks where the content of `aps.alert.body` (or a string `aps.alert`) starts and ends
    /// in the output, between its quotes, so `truncate_body` knows what it may shorten.
    case bodyStart
    case bodyEnd
    /// `aps.timestamp: auto` in a Live Activity: the UNIX time (seconds) of rendering. The
    /// rendered payload is what the state file keeps, so every resend carries the same value.
    case now
}

/// What a placeholder needs at render time, resolved at job load. Plain data; the field name
/// and the template path live in `CompiledTemplate.fields` and `.paths` at the same index.
struct Slot: Sendable {
    let type: ValueType?
    /// The default, already escaped (text) or converted (typed), in `bytes`; `defaultCount` is
    /// -1 when there is no default.
    let defaultStart: Int
    let defaultCount: Int
    /// Allowed values of a typed number (`aps.badge` ≥ 0, `aps.sound.volume` 0–1), checked per row.
    let range: ClosedRange<Double>?

    var hasDefault: Bool { defaultCount >= 0 }
}

/// A validated, compiled template. A class: the renderer hands it around per recipient, and a
/// reference is one retain where a struct of arrays would be several.
final class CompiledTemplate: Sendable {
    /// `push.template` or `push.locales.<locale>`.
    let source: String
    let ops: [RenderOp]
    /// Every literal chunk and default, back to back.
    let bytes: [UInt8]
    let slots: [Slot]
    /// The field each slot reads (`user.first_name`), by slot index.
    let fields: [String]
    /// Where each slot sits in the template (`aps.alert.body`), for row messages.
    let paths: [String]
    /// Bytes with every text placeholder empty and every typed one a single digit.
    let minimumSize: Int
    /// Whether `truncate_body` has a body to shorten in this template.
    let hasBody: Bool

    init(source: String, ops: [RenderOp], bytes: [UInt8], slots: [Slot], fields: [String], paths: [String], minimumSize: Int, hasBody: Bool) {
        self.source = source; self.ops = ops; self.bytes = bytes; self.slots = slots; self.fields = fields; self.paths = paths
        self.minimumSize = minimumSize; self.hasBody = hasBody
    }
}
