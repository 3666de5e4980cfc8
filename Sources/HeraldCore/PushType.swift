/// `apns-push-type` values and the topic suffix each requires (Apple's table of `apns-push-type`
/// values: https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
public enum PushType: String, Sendable, CaseIterable {
    case alert, background, location, voip, complication, fileprovider, liveactivity, mdm, pushtotalk, widgets, controls

    /// The suffix appended to the bundle ID to form `apns-topic`.
    public var topicSuffix: String {
        switch self {
        case .alert, .background, .mdm: return ""
        case .location: return ".location-query"
        case .voip: return ".voip"
        case .complication: return ".complication"
        case .fileprovider: return ".pushkit.fileprovider"
        case .liveactivity: return ".push-type.liveactivity"
        case .pushtotalk: return ".voip-ptt"
        case .widgets: return ".push-type.widgets"
        case .controls: return ".push-type.controls"
        }
    }

    /// Apple: "The maximum size is 4096 bytes, or 5120 bytes for VoIP." (https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns)
    public var payloadLimit: Int { self == .voip ? 5120 : 4096 }
}
