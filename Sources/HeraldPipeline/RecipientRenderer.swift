import HeraldCore
import HeraldPayload
import HeraldState

/// What an audience record becomes: the payload and own headers a recipient is sent, or the
/// invalid row it is reported as. The one place `herald run`'s ingest and `herald validate`'s
/// scan render a record, so the counts `validate` prints are the ones the run finds.
struct RecipientRenderer {
    enum Outcome {
        /// `headers` only when the job templates them per recipient; nil: the job's. `registeredAt`:
        /// `audience.registered_at_field` in ms since the epoch, when the job names it and the row has it.
        /// `due`: the row's time zone and due time, when the job has a `schedule`.
        case recipient(payload: [UInt8], headers: RecipientHeaders?, registeredAt: Int64?, due: (zone: String, dueAt: Double)? = nil)
        case invalid(InvalidRow)
    }

    let payload: PayloadRenderer
    let headers: HeaderRenderer
    let localeField: String?
    /// `audience.registered_at_field`: a value that is not a time makes the row invalid (`bad_field_value`).
    var registeredAtField: String? = nil
    /// `schedule`: each row's zone and due time; nil: no schedule.
    var dueTimes: DueTimes? = nil

    func render(_ record: AudienceRecord) -> Outcome {
        var due: (zone: String, dueAt: Double)?
        if let dueTimes {
            switch dueTimes.resolve(record) {
            case .due(let zone, let dueAt): due = (zone, dueAt)
            case .invalid(let row): return .invalid(row)
            }
        }
        var registeredAt: Int64?
        if let field = registeredAtField, let value = record.registeredAt {
            switch RegistrationTime.milliseconds(value) {
            case .success(let ms): registeredAt = ms
            case .failure(let failure):
                return .invalid(InvalidRow(location: record.location, reason: .badFieldValue, field: field,
                                           detail: "audience.registered_at_field \(field): \(failure.message)"))
            }
        }
        let locale = localeField.flatMap { record.fields[$0]?.text }
        let bytes: [UInt8]
        switch payload.render(record, locale: locale) {
        case .payload(let rendered): bytes = rendered
        case .skip(let field): return .invalid(Self.skipped(record, field))
        case .failure(let reason, let field, let detail):
            return .invalid(InvalidRow(location: record.location, reason: reason, field: field, detail: detail))
        }
        guard headers.variesPerRecipient else { return .recipient(payload: bytes, headers: nil, registeredAt: registeredAt, due: due) }
        switch headers.render(record) {
        case .headers(let h):
            return .recipient(payload: bytes, headers: RecipientHeaders(priority: h.priority, collapseId: h.collapseId, expiration: h.expiration),
                              registeredAt: registeredAt, due: due)
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
