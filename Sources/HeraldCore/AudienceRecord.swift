/// A field value read from an audience row. CSV gives only strings; NDJSON keeps its JSON types
/// so the renderer can put a number where the template wants one.
public enum FieldValue: Sendable, Equatable {
    case string(String)
    /// A JSON number exactly as written in the input (no float round trip).
    case number(String)
    case bool(Bool)
    case null
    /// A nested array or object, as compact JSON text.
    case json(String)

    /// The text a `{{placeholder}}` inside a string becomes.
    public var text: String {
        switch self {
        case .string(let s): return s
        case .number(let n): return n
        case .bool(let b): return b ? "true" : "false"
        case .null: return ""
        case .json(let j): return j
        }
    }
}

/// Where an audience row came from: the file as written in the job and the 1-based physical
/// line where the record starts (the CSV header is line 1).
public struct RowLocation: Sendable, Hashable, CustomStringConvertible {
    public let file: String
    public let line: Int
    public init(file: String, line: Int) { self.file = file; self.line = line }
    public var description: String { "\(file) line \(line)" }
}

/// One usable audience row: a normalized token and the row's fields by name
/// (dotted paths for nested NDJSON objects, e.g. `user.first_name`).
public struct AudienceRecord: Sendable {
    public let location: RowLocation
    public let token: DeviceToken
    public let fields: RecordFields
    /// The value of `audience.id_field` (the recipient's own id, copied to deliveries.csv);
    /// nil when the job names no id field or the row has no value for it.
    public let recipientId: String?
    /// The value of `audience.registered_at_field` as read (the suppression rules interpret it);
    /// nil when the job names no such field or the row has no value for it.
    public let registeredAt: FieldValue?
    /// The values of `audience.app_field` and `audience.environment_field` as text (the router
    /// reads them on every row: the reader hands them over without a look-up by name); nil when
    /// the job names no such field or the row has no value for it.
    public let app: String?
    public let environment: String?
    public init(location: RowLocation, token: DeviceToken, fields: RecordFields,
                recipientId: String? = nil, registeredAt: FieldValue? = nil, app: String? = nil, environment: String? = nil) {
        self.location = location; self.token = token; self.fields = fields
        self.recipientId = recipientId; self.registeredAt = registeredAt; self.app = app; self.environment = environment
    }

    public init(location: RowLocation, token: DeviceToken, fields: [String: FieldValue],
                recipientId: String? = nil, registeredAt: FieldValue? = nil, app: String? = nil, environment: String? = nil) {
        self.init(location: location, token: token, fields: RecordFields(fields), recipientId: recipientId, registeredAt: registeredAt,
                  app: app, environment: environment)
    }
}

/// Why a row went to `invalid.csv`. Raw values are frozen report values.
public enum InvalidRowReason: String, Sendable, CaseIterable {
    case invalidToken = "invalid_token"
    case missingToken = "missing_token"
    case wrongFieldCount = "wrong_field_count"
    case badUTF8 = "bad_utf8"
    case malformedJSON = "malformed_json"
    case missingField = "missing_field"
    case badFieldValue = "bad_field_value"
    case payloadTooLarge = "payload_too_large"
    /// A broadcast audience row (`audience.channel_field`) without a channel id.
    case missingChannelId = "missing_channel_id"
    /// A broadcast audience row whose channel id is not base64 as APNs returns it.
    case invalidChannelId = "invalid_channel_id"
    /// A row whose `audience.app_field` names no app of `apns.apps`.
    case unknownApp = "unknown_app"
}

/// An audience row that could not be used, with the place and a message for the operator.
public struct InvalidRow: Sendable, Equatable {
    public let location: RowLocation
    public let reason: InvalidRowReason
    /// The field the problem is about (the token field, the missing placeholder's field…), or "".
    public let field: String
    public let detail: String
    public init(location: RowLocation, reason: InvalidRowReason, field: String, detail: String) {
        self.location = location; self.reason = reason; self.field = field; self.detail = detail
    }
}

/// What an audience reader yields, in file order.
public enum AudienceEvent: Sendable {
    case record(AudienceRecord)
    case invalid(InvalidRow)
}
