import HeraldCore

/// One step of rendering. A template compiles to a flat list of these so that `render` is a
/// loop of byte appends and dictionary lookups, with no tree walk and no JSON encoder.
enum RenderOp: Sendable {
    /// Pre-encoded JSON bytes: punctuation, keys, literal values, escaped literal text.
    case literal([UInt8])
    /// A placeholder inside a JSON string: the field's text, JSON-escaped.
    case text(slot: Int)
    /// A whole-value typed placeholder: the field's value as a JSON number, bool or value.
    case typed(slot: Int)
    /// Marks where the content of `aps.alert.body` (or a string `aps.alert`) starts and ends
    /// in the output, between its quotes, so `truncate_body` knows what it may shorten.
    case bodyStart
    case bodyEnd
}

/// What a placeholder needs at render time, resolved at job load.
struct Slot: Sendable {
    let field: String
    let type: ValueType?
    /// The default, already escaped (text) or converted (typed); nil when there is none.
    let defaultBytes: [UInt8]?
    /// Allowed values of a typed number (`aps.badge` ≥ 0, `aps.sound.volume` 0–1), checked per row.
    let range: ClosedRange<Double>?
    /// Where the placeholder sits in the template (`aps.alert.body`), for row messages.
    let path: String
}

/// A validated, compiled template.
struct CompiledTemplate: Sendable {
    /// `push.template` or `push.locales.<locale>`.
    let source: String
    let ops: [RenderOp]
    let slots: [Slot]
    /// Bytes with every text placeholder empty and every typed one a single digit.
    let minimumSize: Int
    /// Whether `truncate_body` has a body to shorten in this template.
    let hasBody: Bool
}
