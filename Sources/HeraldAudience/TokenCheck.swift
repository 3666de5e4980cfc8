internal import HeraldCore

/// The token rules every row goes through, CSV or NDJSON: absent or empty → missing_token,
/// not a token → invalid_token with `DeviceToken.Problem`'s message. A broadcast audience's rows
/// name channels instead (`audience.channel_field`): missing_channel_id, invalid_channel_id.
enum TokenCheck {
    /// A channel id as written (surrounding spaces dropped): base64, as APNs returns it.
    static func channelId(_ raw: String) -> Result<DeviceToken, DeviceToken.Problem> {
        let text = raw.trimmingSpaces()
        if text.isEmpty { return .failure(.empty) }
        return BroadcastChannelId.isWellFormed(text) ? .success(DeviceToken(broadcastChannel: text)) : .failure(.notChannelId)
    }

    /// The token in a field's bytes: as is when already canonical, else normalized.
    @inline(__always)
    static func token(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<DeviceToken, DeviceToken.Problem> {
        if isCanonical(bytes) { return .success(DeviceToken(trustedCanonical: String(decoding: bytes, as: UTF8.self))) }
        return DeviceToken.normalize(utf8: bytes)
    }

    /// A record for a token, else the invalid row saying why.
    static func event(_ token: Result<DeviceToken, DeviceToken.Problem>, fields: RecordFields, location: RowLocation,
                      mapping: FieldMapping, carried: FieldMapping.Carried? = nil) -> AudienceEvent {
        switch token {
        case .success(let token):
            return mapping.record(location, token, fields, carried)
        case .failure(.empty) where mapping.channel:
            return .invalid(InvalidRow(location: location, reason: .missingChannelId, field: mapping.token, detail: "no channel id"))
        case .failure(.empty):
            return .invalid(InvalidRow(location: location, reason: .missingToken, field: mapping.token, detail: DeviceToken.Problem.empty.message))
        case .failure(let problem):
            return .invalid(InvalidRow(location: location, reason: mapping.channel ? .invalidChannelId : .invalidToken, field: mapping.token,
                                       detail: problem.message))
        }
    }

    /// For NDJSON, where the token field may be absent, null, or not a string at all.
    static func event(fields: RecordFields, location: RowLocation, mapping: FieldMapping) -> AudienceEvent {
        switch fields[mapping.token] {
        case .string(let raw) where mapping.channel:
            return event(channelId(raw), fields: fields, location: location, mapping: mapping)
        case .number where mapping.channel:
            return event(.failure(.notChannelId), fields: fields, location: location, mapping: mapping)
        case .string(var raw), .number(var raw):
            // The String the lookup made is the token's when it is already canonical.
            let result = raw.withUTF8 { isCanonical($0) }
                ? .success(DeviceToken(trustedCanonical: raw))
                : raw.withUTF8 { DeviceToken.normalize(utf8: $0) }
            return event(result, fields: fields, location: location, mapping: mapping)
        case nil, .null:
            return .invalid(InvalidRow(location: location, reason: mapping.channel ? .missingChannelId : .missingToken, field: mapping.token,
                                       detail: "no value for \"\(mapping.token)\""))
        case .bool, .json:
            return .invalid(InvalidRow(location: location, reason: mapping.channel ? .invalidChannelId : .invalidToken, field: mapping.token,
                                       detail: mapping.channel ? "channel id is not a string" : "device token is not a string"))
        }
    }

    /// The token as is, when it is already what `DeviceToken.normalize` would return: only
    /// lowercase hex digits, an even number of them, 8...256 bytes. Most exports store tokens
    /// this way, and reusing the field's bytes skips normalize's per-byte checks.
    /// Anything else goes through `normalize`, which stays the one definition of a valid token.
    @inline(__always)
    static func isCanonical(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = bytes.count
        guard count % 2 == 0, count >= 2 * DeviceToken.minimumBytes, count <= 2 * DeviceToken.maximumBytes else { return false }
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

    /// `isCanonical` for a String (tests compare it with `DeviceToken.normalize`).
    static func alreadyCanonical(_ raw: String) -> DeviceToken? {
        var raw = raw
        return raw.withUTF8 { isCanonical($0) } ? DeviceToken(trustedCanonical: raw) : nil
    }
}
