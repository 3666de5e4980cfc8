import HeraldCore
import Yams

/// `push.broadcast` and the rules a broadcast campaign adds to the rest of the job: Live Activity
/// pushes to channels (https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
extension Context {
    /// `push.broadcast: { channels: ... }`; `channels` may be left out when the audience names them.
    /// A plain list is the job's one app's channels; with `apns.apps` it may instead map app names
    /// to lists (`channels: { acme: [...], partner: [...] }`), and must with more than one app:
    /// channels are per app (Apple's path is `/4/broadcasts/apps/<bundle id>`).
    func parseBroadcast(_ m: inout YAMLMapping, apps: [AppSpec] = []) throws(JobError) -> BroadcastSpec {
        var spec = BroadcastSpec()
        if let (node, line) = m.node("channels") {
            switch node {
            case .sequence(let items):
                if apps.count > 1 {
                    throw JobError(file: file, line: line, "push.broadcast.channels must name each channel's app with more than one app in apns.apps: "
                                   + "a mapping such as { \(apps[0].name): [...], \(apps[1].name): [...] } (channels are created per app)")
                }
                spec.channels = try listedChannels(items, key: "push.broadcast.channels", line: line, app: nil)
            case .mapping(let byApp):
                guard !apps.isEmpty else {
                    throw JobError(file: file, line: line, "push.broadcast.channels names apps, and the job has one app (apns.topic): "
                                   + "list its channels, such as [dHN0LXNyY2gtY2hubA==]")
                }
                for (k, v) in byApp {
                    let keyLine = k.mark?.line ?? line
                    guard case .scalar(let name) = k else {
                        throw JobError(file: file, line: keyLine, "push.broadcast.channels: keys must be app names of apns.apps")
                    }
                    let key = "push.broadcast.channels.\(name.string)"
                    guard apps.contains(where: { $0.name == name.string }) else {
                        throw JobError(file: file, line: keyLine, "\(key): \"\(name.string)\" is not one of apns.apps: \(apps.map(\.name).joined(separator: ", "))")
                    }
                    guard case .sequence(let items) = v else {
                        throw JobError(file: file, line: v.mark?.line ?? keyLine, "\(key) must be a list of channel ids (as `herald channels create --app \(name.string)` prints them)")
                    }
                    spec.channels += try listedChannels(items, key: key, line: keyLine, app: name.string)
                }
                if byApp.isEmpty { throw JobError(file: file, line: line, "push.broadcast.channels lists no channel") }
            default:
                throw JobError(file: file, line: line, "push.broadcast.channels must be a list of channel ids (as `herald channels create` prints them)"
                               + (apps.count > 1 ? ", per app: { \(apps[0].name): [...], \(apps[1].name): [...] }" : ""))
            }
        }
        try m.finish(known: ["channels"])
        return spec
    }

    /// One list of channel ids: each base64 as APNs gives it, each at most once in the list.
    private func listedChannels(_ items: Node.Sequence, key: String, line: Int?, app: String?) throws(JobError) -> [BroadcastSpec.Channel] {
        if items.isEmpty { throw JobError(file: file, line: line, "\(key) lists no channel") }
        var seen = Set<String>()
        var channels: [BroadcastSpec.Channel] = []
        for (i, item) in items.enumerated() {
            let at = item.mark?.line ?? line ?? 0
            guard case .scalar(let s) = item, BroadcastChannelId.isWellFormed(s.string) else {
                throw JobError(file: file, line: at, "\(key)[\(i)] is not a channel id: APNs gives base64 text "
                               + "(letters, digits, + and /, = at the end) such as dHN0LXNyY2gtY2hubA==")
            }
            guard seen.insert(s.string).inserted else {
                throw JobError(file: file, line: at, "\(key)[\(i)] lists \(s.string) a second time")
            }
            channels.append(.init(id: s.string, line: at, app: app))
        }
        return channels
    }

    /// What a broadcast campaign cannot combine with: each is a job error naming the key.
    /// `audience`: nil when the job has none (the channels are listed in `push.broadcast.channels`).
    func checkBroadcast(push: PushSpec, audience: AudienceSpec?, audienceMap: YAMLMapping?, pushMap: YAMLMapping,
                        throttle: ThrottleSpec, throttleMap: YAMLMapping?, hasSchedule: Bool, top: YAMLMapping) throws(JobError) {
        guard let broadcast = push.broadcast else { return }
        guard push.type == .liveactivity else {
            let problem = "Live Activity updates to channels: push.type must be liveactivity, not \(push.type.rawValue)"
            if !pushMap.has("broadcast"), let a = audienceMap { throw a.error("channel_field", "makes a broadcast, which sends \(problem)") }
            throw pushMap.error("broadcast", "sends \(problem)")
        }
        switch (broadcast.channels.isEmpty, audience) {
        case (false, .some):
            throw pushMap.error("broadcast", "lists its channels, so the job takes no audience section: remove one of them "
                                + "(an audience names its channels with audience.channel_field)")
        case (true, nil):
            throw pushMap.error("broadcast", "needs channels: a list in push.broadcast.channels, or an audience with audience.channel_field")
        case (true, let a?) where a.channelField == nil:
            throw audienceMap!.error("channel_field", "is required for a broadcast audience (the field holding each row's channel id)")
        default: break
        }
        if case .fixed = push.collapseId {
            throw pushMap.error("collapse_id", "does not apply to a broadcast: APNs broadcast requests take no apns-collapse-id")
        }
        if audience?.registeredAtField != nil, let a = audienceMap {
            throw a.error("registered_at_field", "does not apply to a broadcast: it is for the suppression list of dead device tokens")
        }
        if hasSchedule {
            throw top.error("schedule", "does not apply to a broadcast: a channel has no local time (its subscribers are everywhere)")
        }
        if throttle.frequencyCap != nil, let t = throttleMap {
            throw t.error("frequency_cap", "does not apply to a broadcast: the cap counts pushes per device, and a broadcast reaches a channel's subscribers")
        }
    }
}
