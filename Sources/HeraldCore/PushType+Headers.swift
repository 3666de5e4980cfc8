/// The header rules that tie `apns-push-type` to `apns-priority` and `apns-topic` (Apple's
/// push-type table: https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns). One place, read by the job loader (errors with a line number) and by
/// the header renderer (so a `JobSpec` built in code gets the same checks).
extension PushType {
    /// Priorities APNs accepts with this push type. Apple: background is "always 5; 10 is an
    /// error"; Live Activities take 5 or 10 (https://developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications); the others 10, 5 or 1.
    public var allowedPriorities: [Int] {
        switch self {
        case .background: return [5]
        case .liveactivity: return [5, 10]
        default: return [1, 5, 10]
        }
    }

    /// The priority used when the job gives none (APNs' own default is 10, an error for background).
    public var defaultPriority: Int { self == .background ? 5 : 10 }

    /// Why `priority` cannot go with this push type, completing "push.priority …"; nil if it can.
    public func priorityProblem(_ priority: Int) -> String? {
        if allowedPriorities.contains(priority) { return nil }
        switch self {
        case .background:
            return "must be 5 for background pushes, not \(priority) (Apple: priority 10 is an error for background)"
        case .liveactivity:
            return "must be 5 or 10 for liveactivity pushes, not \(priority)"
        default:
            return "must be 1, 5 or 10, not \(priority)"
        }
    }

    /// The `apns-topic` for a configured `apns.topic`: the bundle id plus this type's suffix
    /// (`com.example.app` → `com.example.app.voip`). A topic that already ends in this type's
    /// suffix is used as written. One that ends in another type's suffix is an error: Apple
    /// answers it with `DeviceTokenNotForTopic` or `BadTopic` for every recipient.
    public func topic(for configured: String) -> Result<String, TopicProblem> {
        if configured.isEmpty { return .failure(TopicProblem("is empty")) }
        if configured.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) {
            return .failure(TopicProblem("must not contain spaces or control characters"))
        }
        // mdm: the topic is the UID of the MDM push certificate, used as is.
        if self == .mdm { return .success(configured) }
        if !topicSuffix.isEmpty, configured.hasSuffix(topicSuffix) { return .success(configured) }
        // Longest suffix first: ".voip-ptt" must not be read as ".voip".
        let others = PushType.allCases.filter { $0 != self && !$0.topicSuffix.isEmpty }
            .sorted { $0.topicSuffix.utf8.count > $1.topicSuffix.utf8.count }
        if let other = others.first(where: { configured.hasSuffix($0.topicSuffix) }) {
            let bundle = String(configured.dropLast(other.topicSuffix.count))
            let wanted = bundle + topicSuffix
            return .failure(TopicProblem("\(configured) ends in \(other.topicSuffix), the suffix of \(other.rawValue) pushes; "
                + "push.type \(rawValue) sends to \(wanted) (give the bundle id \(bundle); herald appends the suffix)"))
        }
        return .success(configured + topicSuffix)
    }
}

/// Why a configured `apns.topic` cannot be used; completes "apns.topic …".
public struct TopicProblem: Error, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
