import HeraldCore

/// Apple's documented `aps` keys and the value each takes (https://developer.apple.com/documentation/usernotifications/generating-a-remote-notification,
/// and the older Payload Key Reference: https://developer.apple.com/library/archive/documentation/NetworkingInternet/Conceptual/RemoteNotificationsPG/PayloadKeyReference.html).
/// Apple: "Any other keys in the aps dictionary are ignored by Apple", so an unknown key is almost
/// always a typo worth stopping for. Live Activity keys are from ActivityKit's push page, marked
/// [LA] below: https://developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications.
enum Shape: Sendable {
    case string
    case nonNegativeInteger
    case integer
    /// Exactly `1` (`content-available`, `mutable-content`, `input-push-token`).
    case one
    /// Exactly `true` (`content-changed`, WidgetKit and control reloads).
    case isTrue
    /// `0` or `1` (`sound.critical`).
    case flag
    case number(ClosedRange<Double>?)
    case oneOf([String])
    case object
    case stringArray
    case alert
    case sound
    /// A Live Activity alert's `title` or `body`: text, or `{loc-key, loc-args}` [LA].
    case localizable
    indirect case orNull(Shape)

    /// Completes "aps.badge must be …".
    var expected: String {
        switch self {
        case .string: return "a string"
        case .nonNegativeInteger: return "a non-negative integer or a {{field:int}} placeholder"
        case .integer: return "an integer or a {{field:int}} placeholder"
        case .one: return "1"
        case .isTrue: return "true"
        case .flag: return "0 or 1"
        case .number(nil): return "a number or a {{field:number}} placeholder"
        case .number(let range?): return "a number from \(range.lowerBound) to \(range.upperBound) or a {{field:number}} placeholder"
        case .oneOf(let values): return "one of \(values.joined(separator: ", "))"
        case .object: return "an object"
        case .stringArray: return "an array of strings"
        case .alert: return "a string or a dictionary of alert keys"
        case .localizable: return "a string or a dictionary {loc-key, loc-args}"
        case .sound: return "a string or a dictionary {critical, name, volume}"
        case .orNull(let inner): return "\(inner.expected), or null"
        }
    }
}

enum APSRules {
    /// Ordered as in Apple's table, so the "allowed here" list in messages reads like the docs.
    static let aps: [(key: String, shape: Shape)] = [
        ("alert", .alert), ("badge", .nonNegativeInteger), ("sound", .sound),
        ("thread-id", .string), ("category", .string), ("content-available", .one),
        ("mutable-content", .one), ("target-content-id", .string),
        ("interruption-level", .oneOf(["passive", "active", "time-sensitive", "critical"])),
        ("relevance-score", .number(nil)), ("filter-criteria", .string),
        ("stale-date", .integer), ("content-state", .object), ("timestamp", .integer),
        ("event", .oneOf(["start", "update", "end"])), ("dismissal-date", .integer),
        ("attributes-type", .string), ("attributes", .object),
        ("input-push-token", .one), ("input-push-channel", .string), ("content-changed", .isTrue),
    ]

    /// Keys that only mean something in a Live Activity push (`apns-push-type: liveactivity`) [LA].
    static let liveActivityOnly: Set<String> = [
        "stale-date", "content-state", "timestamp", "event", "dismissal-date", "attributes-type", "attributes",
        "input-push-token", "input-push-channel",
    ]

    /// A Live Activity alert: title and body may be localized, and the sound sits inside the alert [LA].
    static let liveActivityAlert: [(key: String, shape: Shape)] = [
        ("title", .localizable), ("body", .localizable), ("sound", .string),
    ]

    static let localized: [(key: String, shape: Shape)] = [("loc-key", .string), ("loc-args", .stringArray)]

    /// Ranges checked at load for literals and at render time for typed placeholders.
    static func range(path: String, pushType: PushType) -> ClosedRange<Double>? {
        switch path {
        case "aps.badge", "aps.alert.summary-arg-count": return 0...Double.greatestFiniteMagnitude
        case "aps.sound.volume": return 0...1
        // Apple: 0–1; "any Double" for Live Activities [LA].
        case "aps.relevance-score": return pushType == .liveactivity ? nil : 0...1
        default: return nil
        }
    }

    /// Table 9-2 of the Payload Key Reference plus the keys Apple added later (subtitle,
    /// summary-arg) and the legacy `action-loc-key` that Apple's own Examples 2 and 5 use.
    static let alert: [(key: String, shape: Shape)] = [
        ("title", .string), ("subtitle", .string), ("body", .string), ("launch-image", .string),
        ("title-loc-key", .orNull(.string)), ("title-loc-args", .orNull(.stringArray)),
        ("subtitle-loc-key", .orNull(.string)), ("subtitle-loc-args", .orNull(.stringArray)),
        ("loc-key", .string), ("loc-args", .stringArray), ("action-loc-key", .orNull(.string)),
        ("summary-arg", .string), ("summary-arg-count", .nonNegativeInteger),
    ]

    /// Critical-alert sound: `{"critical": 1, "name": "default", "volume": 1.0}`.
    static let sound: [(key: String, shape: Shape)] = [
        ("critical", .flag), ("name", .string), ("volume", .number(0...1)),
    ]

    /// Keys a background push must not carry (Apple: "you must not include alert, badge or sound").
    static let forbiddenInBackground = ["alert", "badge", "sound"]

    static func shape(in table: [(key: String, shape: Shape)], for key: String) -> Shape? {
        table.first { $0.key == key }?.shape
    }
}
