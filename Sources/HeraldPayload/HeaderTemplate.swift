import HeraldCore

/// A header value written with placeholders (`push.collapse_id: "order-{{order_id}}"`,
/// `push.priority: "{{priority|10}}"`, `push.expiration: "{{expires_at}}"`), parsed once per
/// job. Header values are plain text, not JSON: fields are copied as they are and the result is
/// checked by the caller (a control character would end the header line, so it is refused).
struct HeaderTemplate: Sendable {
    /// The job key, for messages (`push.collapse_id`).
    let key: String
    let segments: [StringSegment]

    init(key: String, text: String) throws(PayloadTemplateError) {
        self.key = key
        do throws(PlaceholderProblem) { segments = try PlaceholderSyntax.parse(text) } catch {
            switch error {
            case .unterminated: throw .header(key: key, problem: "has an unterminated placeholder")
            case .bad(let message): throw .header(key: key, problem: "has a bad placeholder: \(message)")
            }
        }
    }

    var hasPlaceholders: Bool {
        segments.contains { if case .placeholder = $0 { return true } else { return false } }
    }

    /// The text with every placeholder empty (its default ignored): what is fixed per job.
    var literalText: String {
        segments.map { if case .literal(let s) = $0 { return s } else { return "" } }.joined()
    }

    /// The value for one recipient. A null or empty field is missing, as in payload templates;
    /// its default applies, else `policy` (`empty` leaves the placeholder out).
    func render(_ record: AudienceRecord, policy: MissingFieldPolicy) -> Rendered {
        var text = ""
        for segment in segments {
            switch segment {
            case .literal(let s): text += s
            case .placeholder(let p):
                if let value = record.fields[p.field], !value.isBlank {
                    text += value.text
                } else if let fallback = p.defaultText {
                    text += fallback
                } else {
                    switch policy {
                    case .empty: continue
                    case .skipRecipient: return .skip(field: p.field)
                    case .error:
                        let how = record.fields[p.field] == nil ? "missing" : "empty"
                        return .failure(field: p.field, detail: "field \(p.field) is \(how) (used in \(key))")
                    }
                }
            }
        }
        return .text(text)
    }

    enum Rendered {
        case text(String)
        case skip(field: String)
        case failure(field: String, detail: String)
    }

    /// The one field a row value came from, for `bad_field_value` rows ("" when none or several).
    var field: String {
        let fields = segments.compactMap { if case .placeholder(let p) = $0 { return p.field } else { return nil } }
        return fields.count == 1 ? fields[0] : ""
    }

    /// True if `text` has a byte that cannot appear in an HTTP header value (controls, DEL).
    static func hasControl(_ text: String) -> Bool {
        text.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }
}
