internal import HeraldCore

/// The job's field mapping as the row parsers need it: which field holds the token, and which
/// ones the record carries by name (`id_field`, `registered_at_field`).
struct FieldMapping {
    /// The token field, or for a broadcast audience the channel field.
    let token: String
    /// `audience.channel_field`: rows name broadcast channels, not device tokens.
    let channel: Bool
    let id: String?
    let locale: String?
    let registeredAt: String?
    let timezone: String?
    /// `audience.app_field`, `audience.environment_field` (many apps).
    let app: String?
    let environment: String?
    /// Columns the templates need in every row (`AudienceSpec.templateColumns`).
    let templateColumns: [(column: String, usedBy: String)]

    init(_ spec: AudienceSpec) {
        templateColumns = spec.templateColumns
        token = spec.channelField ?? spec.tokenField
        channel = spec.channelField != nil
        id = spec.idField
        locale = spec.localeField
        registeredAt = spec.registeredAtField
        timezone = spec.timezoneField
        app = spec.appField
        environment = spec.environmentField
    }

    /// Fields other than the token that a CSV header must have, with the job key naming each:
    /// a typo in `id_field` must stop the run, not empty a report column.
    var namedColumns: [(key: String, column: String)] {
        [("audience.id_field", id), ("audience.locale_field", locale), ("audience.registered_at_field", registeredAt),
         ("audience.timezone_field", timezone), ("audience.app_field", app), ("audience.environment_field", environment)]
            .compactMap { key, column in column.map { (key, $0) } }
    }

    /// The values a record carries by name, when the parser already has them (CSV reads them
    /// by column, without a lookup by name).
    struct Carried {
        var recipientId: String?
        var registeredAt: FieldValue?
        var app: String?
        var environment: String?
    }

    func record(_ location: RowLocation, _ token: DeviceToken, _ fields: RecordFields, _ carried: Carried?) -> AudienceEvent {
        let carried = carried ?? Carried(recipientId: id.flatMap { Self.value(fields[$0])?.text },
                                         registeredAt: registeredAt.flatMap { Self.value(fields[$0]) },
                                         app: app.flatMap { Self.value(fields[$0])?.text }, environment: environment.flatMap { Self.value(fields[$0])?.text })
        return .record(AudienceRecord(location: location, token: token, fields: fields, recipientId: carried.recipientId,
                                      registeredAt: carried.registeredAt, app: carried.app, environment: carried.environment))
    }

    /// Null and the empty string are "no value" (CSV cannot tell an empty field from a missing one).
    static func value(_ field: FieldValue?) -> FieldValue? {
        switch field {
        case nil, .null, .string(""): return nil
        case let value?: return value
        }
    }
}
