import HeraldCore
import HeraldPayload
import HeraldState

/// What an audience record becomes: the payload and own headers a recipient is sent, or the
/// invalid row it is reported as. The one place `herald run`'s ingest and `herald validate`'s
/// scan render a record, so the counts `validate` prints are the ones the run finds.
struct RecipientRenderer {
    enum Outcome {
        /// `headers` only when the job templates them per recipient; nil: the job's.
        case recipient(payload: [UInt8], headers: RecipientHeaders?)
        case invalid(InvalidRow)
    }

    let payload: PayloadRenderer
    let headers: HeaderRenderer
    let localeField: String?

    func render(_ record: AudienceRecord) -> Outcome {
        let locale = localeField.flatMap { record.fields[$0]?.text }
        let bytes: [UInt8]
        switch payload.render(record, locale: locale) {
        case .payload(let rendered): bytes = rendered
        case .skip(let field): return .invalid(Self.skipped(record, field))
        case .failure(let reason, let field, let detail):
            return .invalid(InvalidRow(location: record.location, reason: reason, field: field, detail: detail))
        }
        guard headers.variesPerRecipient else { return .recipient(payload: bytes, headers: nil) }
        switch headers.render(record) {
        case .headers(let h):
            return .recipient(payload: bytes, headers: RecipientHeaders(priority: h.priority, collapseId: h.collapseId, expiration: h.expiration))
        case .skip(let field): return .invalid(Self.skipped(record, field))
        case .failure(let reason, let field, let detail):
            return .invalid(InvalidRow(location: record.location, reason: reason, field: field, detail: detail))
        }
    }

    static func skipped(_ record: AudienceRecord, _ field: String) -> InvalidRow {
        InvalidRow(location: record.location, reason: .missingField, field: field,
                   detail: "field \(field) is missing; recipient skipped (missing_field: skip_recipient)")
    }
}
