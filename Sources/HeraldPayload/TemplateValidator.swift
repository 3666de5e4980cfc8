import HeraldCore

/// Job-level checks of one template (the default or a locale variant) against Apple's rules.
/// Runs once per job; literal values are checked here, placeholder values at render time.
struct TemplateValidator {
    /// `push.template` or `push.locales.<locale>`: the start of every message.
    let source: String
    let pushType: PushType
    /// `push.broadcast`: one payload to every subscriber of a channel, which updates or ends an
    /// activity and cannot start one.
    var broadcast = false

    func validate(_ template: JSONValue) throws(PayloadTemplateError) {
        guard case .object = template, case .object(let apsMembers)? = template["aps"] else {
            throw .missingAPS(source: source)
        }
        try checkKeys(template, path: "")
        for member in apsMembers {
            // `timestamp: auto`: the time the recipient's push is first rendered (TemplateCompiler).
            if member.key == "timestamp", member.value == .string(Self.autoTimestamp) { continue }
            if member.key == "timestamp", case .string(let text) = member.value, !text.contains("{{") {
                // `AUTO`, `now`: a near miss of the one word herald takes.
                throw .wrongValue(source: source, path: "aps.timestamp",
                                  expected: "the UNIX time in seconds of the content, or auto (in lower case) for the time each push is "
                                  + "first rendered, not \"\(text)\"")
            }
            guard let shape = APSRules.shape(in: APSRules.aps, for: member.key) else {
                throw .unknownKey(source: source, path: "aps.\(member.key)", allowed: APSRules.aps.map(\.key))
            }
            try check(member.value, is: shape, path: "aps.\(member.key)")
        }
        let keys = apsMembers.map(\.key)
        try checkSilent(keys)
        try checkLiveActivity(apsMembers)
    }

    /// Background (silent) pushes. Apple (https://developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app): "create a remote notification with an aps
    /// dictionary that includes only the content-available key"; "you must not include alert,
    /// badge or sound". And the reverse: a payload that is only
    /// `content-available: 1` sent as an alert push is a silent push with the wrong headers.
    private func checkSilent(_ keys: [String]) throws(PayloadTemplateError) {
        if pushType == .background {
            if let bad = keys.first(where: { APSRules.forbiddenInBackground.contains($0) }) {
                throw .backgroundPush(source: source, problem: "must not include aps.alert, aps.badge or aps.sound (found aps.\(bad))")
            }
            guard keys.contains("content-available") else {
                throw .backgroundPush(source: source, problem: "needs aps.content-available: 1")
            }
            if let other = keys.first(where: { $0 != "content-available" }) {
                throw .backgroundPush(source: source, problem: "has only aps.content-available: 1 in aps (Apple); "
                                      + "found aps.\(other) (custom keys go beside aps)")
            }
        } else if pushType == .alert, !keys.contains(where: { APSRules.forbiddenInBackground.contains($0) }) {
            if keys.contains("content-available") { throw .silentAsAlert(source: source) }
            // Apple: the alert type is for "notifications that trigger a user interaction—for
            // example, an alert, badge, or sound"; without one the device shows nothing.
            throw .alertShowsNothing(source: source)
        }
    }

    /// `aps.timestamp: auto` in a Live Activity template.
    static let autoTimestamp = "auto"

    /// Live Activity keys belong to `liveactivity` pushes, checked per event as Apple describes
    /// them (https://developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications):
    /// every push needs `event` and `timestamp`; a start (push-to-start token) carries the
    /// activity's `attributes-type`, `attributes`, first `content-state` and an `alert`, and may ask
    /// for an update token (`input-push-token: 1`) or subscribe to a broadcast channel
    /// (`input-push-channel`); an update or end goes to the activity's own token with its new
    /// `content-state`; only an end may set `dismissal-date`.
    private func checkLiveActivity(_ aps: [JSONValue.Member]) throws(PayloadTemplateError) {
        let keys = Set(aps.map(\.key))
        guard pushType == .liveactivity else {
            if let key = aps.first(where: { APSRules.liveActivityOnly.contains($0.key) })?.key {
                throw .liveActivity(source: source, problem: "aps.\(key) is a Live Activity key: it needs push.type: liveactivity, not \(pushType.rawValue)")
            }
            return
        }
        guard keys.contains("event") else {
            throw .liveActivity(source: source, problem: "a liveactivity push needs aps.event (start, update or end)")
        }
        guard keys.contains("timestamp") else {
            throw .liveActivity(source: source, problem: "a liveactivity push needs aps.timestamp: the UNIX time (seconds) of its content, "
                                + "or auto for the time each recipient's push is first rendered")
        }
        func value(_ key: String) -> JSONValue? { aps.first(where: { $0.key == key })?.value }
        guard case .string(let event)? = value("event") else { return }
        if broadcast && event == "start" {
            // Apple: devices subscribe to a channel from an activity they already run
            // (https://developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications).
            throw .liveActivity(source: source, problem: "a broadcast updates or ends the activities subscribed to its channel; it cannot start one "
                                + "(event: start): send push-to-start pushes per device instead")
        }
        switch event {
        case "start":
            let why = ["attributes-type": "the name of the app's ActivityAttributes type", "attributes": "the activity's static attributes",
                       "content-state": "the activity's first content state", "alert": "a start must alert the person"]
            for required in ["attributes-type", "attributes", "content-state", "alert"] where !keys.contains(required) {
                throw .liveActivity(source: source, problem: "a Live Activity start (event: start) needs aps.\(required) (\(why[required]!))")
            }
            if keys.contains("input-push-token") && keys.contains("input-push-channel") {
                throw .liveActivity(source: source, problem: "a Live Activity start takes aps.input-push-token (updates to a token) "
                                    + "or aps.input-push-channel (updates on a broadcast channel), not both")
            }
            if case .string(let channel)? = value("input-push-channel"), !channel.contains("{{"), !BroadcastChannelId.isWellFormed(channel) {
                throw .liveActivity(source: source, problem: "aps.input-push-channel must be a channel id as APNs returns it (base64), not \"\(channel)\"")
            }
            if keys.contains("dismissal-date") {
                throw .liveActivity(source: source, problem: "aps.dismissal-date only goes with event: end (when to remove an ended activity), not start")
            }
        default:
            guard keys.contains("content-state") else {
                throw .liveActivity(source: source, problem: "a Live Activity \(event) (event: \(event)) needs aps.content-state (the activity's new content state)")
            }
            for startOnly in ["attributes-type", "attributes", "input-push-token", "input-push-channel"] where keys.contains(startOnly) {
                throw .liveActivity(source: source, problem: "aps.\(startOnly) only goes with event: start; an \(event) is sent to the activity's own push token")
            }
            if event == "update", keys.contains("dismissal-date") {
                throw .liveActivity(source: source, problem: "aps.dismissal-date only goes with event: end (when to remove an ended activity), not update")
            }
        }
    }

    private func check(_ value: JSONValue, is written: Shape, path: String) throws(PayloadTemplateError) {
        var shape = written
        if case .number(nil) = written, let range = APSRules.range(path: path, pushType: pushType) { shape = .number(range) }
        let wrong = PayloadTemplateError.wrongValue(source: source, path: path, expected: shape.expected)
        switch shape {
        case .orNull(let inner):
            if value == .null { return }
            do throws(PayloadTemplateError) { try check(value, is: inner, path: path) } catch {
                if case .wrongValue = error { throw wrong }
                throw error
            }
        case .string:
            guard case .string(let s) = value, try typed(s, path) == nil else { throw wrong }
        case .oneOf(let allowed):
            guard case .string(let s) = value, allowed.contains(s) else { throw wrong }
        case .one, .flag:
            guard case .number(let n) = value, n == "1" || (n == "0" && shapeIsFlag(shape)) else { throw wrong }
        case .isTrue:
            guard value == .bool(true) else { throw wrong }
        case .nonNegativeInteger, .integer:
            switch value {
            case .number(let n):
                guard let i = Int(n), i >= 0 || !shapeIsNonNegative(shape) else { throw wrong }
            case .string(let s):
                guard try typed(s, path) == .int else { throw wrong }
            default: throw wrong
            }
        case .number(let range):
            switch value {
            case .number(let n):
                guard let d = Double(n), d.isFinite else { throw wrong }
                if let range, !range.contains(d) { throw wrong }
            case .string(let s):
                guard let t = try typed(s, path), t == .number || t == .int else { throw wrong }
            default: throw wrong
            }
        case .object:
            guard case .object = value else { throw wrong }
        case .stringArray:
            guard case .array(let items) = value else { throw wrong }
            for (i, item) in items.enumerated() { try check(item, is: .string, path: "\(path)[\(i)]") }
        case .alert:
            let table = pushType == .liveactivity ? APSRules.liveActivityAlert : APSRules.alert
            try checkDictionaryOrString(value, table: table, path: path, wrong: wrong)
        case .sound:
            try checkDictionaryOrString(value, table: APSRules.sound, path: path, wrong: wrong)
        case .localizable:
            try checkDictionaryOrString(value, table: APSRules.localized, path: path, wrong: wrong)
        }
    }

    private func checkDictionaryOrString(_ value: JSONValue, table: [(key: String, shape: Shape)], path: String,
                                         wrong: PayloadTemplateError) throws(PayloadTemplateError) {
        switch value {
        case .string: try check(value, is: .string, path: path)
        case .object(let members):
            for member in members {
                guard let shape = APSRules.shape(in: table, for: member.key) else {
                    throw .unknownKey(source: source, path: "\(path).\(member.key)", allowed: table.map(\.key))
                }
                try check(member.value, is: shape, path: "\(path).\(member.key)")
            }
        default: throw wrong
        }
    }

    /// The type of a whole-value typed placeholder, nil for plain text; placeholder syntax
    /// errors surface here with the path.
    private func typed(_ s: String, _ path: String) throws(PayloadTemplateError) -> ValueType? {
        do throws(PlaceholderProblem) {
            return PlaceholderSyntax.wholeTyped(try PlaceholderSyntax.parse(s))?.type
        } catch {
            throw TemplateCompiler.error(error, source: source, path: path)
        }
    }

    /// Every object's keys, anywhere: no duplicates (JSON allows them, APNs' parser would keep
    /// one silently, and a second `aps` could shadow the first) and no placeholders (a key is
    /// sent as written, so `{{name}}` there is always a mistake).
    private func checkKeys(_ value: JSONValue, path: String) throws(PayloadTemplateError) {
        switch value {
        case .object(let members):
            var seen = Set<String>()
            for m in members {
                let childPath = path.isEmpty ? m.key : "\(path).\(m.key)"
                guard seen.insert(m.key).inserted else { throw .duplicateKey(source: source, path: childPath) }
                if m.key.contains("{{") {
                    throw .badPlaceholder(source: source, path: childPath, problem: "placeholders are not allowed in keys, only in string values")
                }
                try checkKeys(m.value, path: childPath)
            }
        case .array(let items):
            for (i, item) in items.enumerated() { try checkKeys(item, path: "\(path)[\(i)]") }
        default: return
        }
    }

    private func shapeIsFlag(_ shape: Shape) -> Bool { if case .flag = shape { return true } else { return false } }
    private func shapeIsNonNegative(_ shape: Shape) -> Bool {
        if case .nonNegativeInteger = shape { return true } else { return false }
    }
}
