internal import HeraldCore

/// The job's field mapping as the row parsers need it: which field holds the token, and which
/// ones the record carries by name (`id_field`, `registered_at_field`).
struct FieldMapping {
    let token: String
    let id: String?
    let locale: String?
    let registeredAt: String?

    init(_ spec: AudienceSpec) {
        token = spec.tokenField
        id = spec.idField
        locale = spec.localeField
        registeredAt = spec.registeredAtField
    }

    /// Fields other than the token that a CSV header must have, with the job key naming each:
    /// a typo in `id_field` must stop the run, not empty a report column.
    var namedColumns: [(key: String, column: String)] {
        [("audience.id_field", id), ("audience.locale_field", locale), ("audience.registered_at_field", registeredAt)]
            .compactMap { key, column in column.map { (key, $0) } }
    }

    func record(_ location: RowLocation, _ token: DeviceToken, _ fields: [String: FieldValue]) -> AudienceEvent {
        .record(AudienceRecord(location: location, token: token, fields: fields,
                               recipientId: id.flatMap { Self.value(fields[$0])?.text },
                               registeredAt: registeredAt.flatMap { Self.value(fields[$0]) }))
    }

    /// Null and the empty string are "no value" (CSV cannot tell an empty field from a missing one).
    private static func value(_ field: FieldValue?) -> FieldValue? {
        switch field {
        case nil, .null, .string(""): return nil
        case let value?: return value
        }
    }
}

/// The token rules every row goes through, CSV or NDJSON: absent or empty → missing_token,
/// not a token → invalid_token with `DeviceToken.Problem`'s message.
enum TokenCheck {
    /// A record if `raw` normalizes to a token, else the invalid row saying why.
    static func event(raw: String?, fields: [String: FieldValue], location: RowLocation, mapping: FieldMapping) -> AudienceEvent {
        let tokenField = mapping.token
        guard let raw else {
            return .invalid(InvalidRow(location: location, reason: .missingToken, field: tokenField, detail: "no value for \"\(tokenField)\""))
        }
        if let token = alreadyCanonical(raw) {
            return mapping.record(location, token, fields)
        }
        // The String overload, not `normalize(utf8:)` with our bytes: HeraldCore specializes it
        // for [UInt8] internally, while a cross-module call of the generic one runs unspecialized
        // (witness-table calls per byte; it was ~35 % of reading time).
        switch DeviceToken.normalize(raw) {
        case .success(let token):
            return mapping.record(location, token, fields)
        case .failure(.empty):
            return .invalid(InvalidRow(location: location, reason: .missingToken, field: tokenField, detail: DeviceToken.Problem.empty.message))
        case .failure(let problem):
            return .invalid(InvalidRow(location: location, reason: .invalidToken, field: tokenField, detail: problem.message))
        }
    }

    /// For NDJSON, where the token field may be absent, null, or not a string at all.
    static func event(fields: [String: FieldValue], location: RowLocation, mapping: FieldMapping) -> AudienceEvent {
        switch fields[mapping.token] {
        case .string(let s), .number(let s):
            return event(raw: s, fields: fields, location: location, mapping: mapping)
        case nil, .null:
            return event(raw: nil, fields: fields, location: location, mapping: mapping)
        case .bool, .json:
            return .invalid(InvalidRow(location: location, reason: .invalidToken, field: mapping.token, detail: "device token is not a string"))
        }
    }

    /// The token as is, when it is already what `DeviceToken.normalize` would return: only
    /// lowercase hex digits, an even number of them, 8...256 bytes. Most exports store tokens
    /// this way, and reusing the field's String skips normalize's copy (~15 % of reading time).
    /// Anything else goes through `normalize`, which stays the one definition of a valid token.
    static func alreadyCanonical(_ raw: String) -> DeviceToken? {
        let count = raw.utf8.count
        guard count % 2 == 0, count >= 2 * DeviceToken.minimumBytes, count <= 2 * DeviceToken.maximumBytes else { return nil }
        let allLowerHex = raw.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            // Branch-free so it vectorizes: with random hex, "digit or a-f?" mispredicts a
            // third of the time. (x - lo) - width borrows, leaving 0xFF in the high byte, iff
            // x is in lo..<lo+width.
            var ok: UInt8 = 0xFF
            for b in bytes {
                let digit = UInt8(truncatingIfNeeded: (UInt16(b &- 0x30) &- 10) >> 8)
                let lower = UInt8(truncatingIfNeeded: (UInt16(b &- 0x61) &- 6) >> 8)
                ok &= digit | lower
            }
            return ok == 0xFF
        }
        return allLowerHex == true ? DeviceToken(trustedCanonical: raw) : nil
    }
}
