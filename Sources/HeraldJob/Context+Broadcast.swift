import HeraldCore
import Yams

/// `push.broadcast` and the rules a broadcast campaign adds to the rest of the job: Live Activity
/// pushes to channels (https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
extension Context {
    /// `push.broadcast: { channels: [...] }`; `channels` may be left out when the audience names them.
    func parseBroadcast(_ m: inout YAMLMapping) throws(JobError) -> BroadcastSpec {
        var spec = BroadcastSpec()
        if let (node, line) = m.node("channels") {
            guard case .sequence(let items) = node else {
                throw JobError(file: file, line: line, "push.broadcast.channels must be a list of channel ids (as `herald channels create` prints them)")
            }
            var seen = Set<String>()
            for (i, item) in items.enumerated() {
                let at = item.mark?.line ?? line ?? 0
                guard case .scalar(let s) = item, BroadcastChannelId.isWellFormed(s.string) else {
                    throw JobError(file: file, line: at, "push.broadcast.channels[\(i)] is not a channel id: APNs gives base64 text "
                                   + "(letters, digits, + and /, = at the end) such as dHN0LXNyY2gtY2hubA==")
                }
                guard seen.insert(s.string).inserted else {
                    throw JobError(file: file, line: at, "push.broadcast.channels[\(i)] lists \(s.string) a second time")
                }
                spec.channels.append(.init(id: s.string, line: at))
            }
            if items.isEmpty { throw JobError(file: file, line: line, "push.broadcast.channels lists no channel") }
        }
        try m.finish(known: ["channels"])
        return spec
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
