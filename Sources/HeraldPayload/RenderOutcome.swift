import HeraldCore

/// What rendering one recipient produced. Row-level problems are values, not thrown errors,
/// because the pipeline routes them to `invalid.csv` and carries on with the next recipient.
public enum RenderOutcome: Sendable {
    /// UTF-8 JSON bytes, at most `push.type.payloadLimit` long.
    case payload([UInt8])
    /// A placeholder's field is missing and `missing_field: skip_recipient` is set.
    case skip(field: String)
    /// The row cannot be rendered: `.missingField`, `.badFieldValue` or `.payloadTooLarge`.
    /// `field` is the placeholder's field name ("" for size problems).
    case failure(reason: InvalidRowReason, field: String, detail: String)
}

/// What `render(_:locale:into:)` produced; on `.payload` the bytes are in the caller's buffer.
public enum RenderStatus: Sendable, Equatable {
    case payload
    case skip(field: String)
    case failure(reason: InvalidRowReason, field: String, detail: String)
}
