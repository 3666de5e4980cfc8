import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// `push.broadcast` and `audience.channel_field`: what a broadcast campaign is, and each key it
/// cannot take, with the message and line an operator gets (exit 2).
@Suite struct BroadcastJobKeysTests {
    let dir = TemporaryDirectory("job-broadcast")
    static let update = "template: { aps: { event: update, timestamp: auto, content-state: { s: 1 } } }"

    func load(_ text: String) throws -> JobSpec {
        try dir.write("data/channels.csv", "channel,match\nbWF0Y2gtNDI=,42\n")
        return try JobLoader.load(path: try dir.write("jobs/job.yaml", text))
    }

    func refusal(_ text: String) -> JobError? {
        do { _ = try load(text); return nil } catch let e as JobError { return e } catch { return nil }
    }

    @Test func channelsListedInTheJobNeedNoAudience() throws {
        let spec = try load("""
            campaign: c
            apns: { endpoint: simulator, topic: com.example.app }
            push:
              type: liveactivity
              broadcast:
                channels:
                  - bWF0Y2gtNDI=
                  - "dHN0LXNyY2gtY2hubA=="
              \(Self.update)
            """)
        #expect(spec.isBroadcast && spec.audience.files.isEmpty)
        #expect(spec.push.broadcast?.channels == [.init(id: "bWF0Y2gtNDI=", line: 7), .init(id: "dHN0LXNyY2gtY2hubA==", line: 8)])
    }

    @Test func anAudienceWithAChannelFieldIsABroadcast() throws {
        for push in ["push: { type: liveactivity, \(Self.update) }", "push: { type: liveactivity, broadcast: {}, \(Self.update) }"] {
            let spec = try load("""
                campaign: c
                audience: { files: [../data/channels.csv], channel_field: channel }
                apns: { endpoint: simulator, topic: com.example.app }
                \(push)
                """)
            #expect(spec.isBroadcast && spec.audience.channelField == "channel" && spec.push.broadcast?.channels == [])
        }
    }

    @Test func eachRuleHasItsMessage() throws {
        let apns = "apns: { endpoint: simulator, topic: com.example.app }"
        let audience = "audience: { files: [../data/channels.csv], channel_field: channel }"
        let cases: [(String, Int?, String)] = [
            ("campaign: c\n\(apns)\npush:\n  type: liveactivity\n  broadcast: { channels: [not base64!] }\n  \(Self.update)", 5,
             "push.broadcast.channels[0] is not a channel id: APNs gives base64 text"),
            ("campaign: c\n\(apns)\npush:\n  type: liveactivity\n  broadcast:\n    channels: [bWF0Y2gtNDI=, bWF0Y2gtNDI=]\n  \(Self.update)", 6,
             "push.broadcast.channels[1] lists bWF0Y2gtNDI= a second time"),
            ("campaign: c\n\(apns)\npush:\n  type: liveactivity\n  broadcast: { channels: [] }\n  \(Self.update)", 5,
             "push.broadcast.channels lists no channel"),
            ("campaign: c\n\(apns)\npush:\n  broadcast: { channels: [bWF0Y2gtNDI=] }\n  template: { aps: { alert: hi } }", 4,
             "push.broadcast sends Live Activity updates to channels: push.type must be liveactivity, not alert"),
            ("campaign: c\n\(audience)\n\(apns)\npush:\n  type: liveactivity\n  broadcast: { channels: [bWF0Y2gtNDI=] }\n  \(Self.update)", 6,
             "push.broadcast lists its channels, so the job takes no audience section"),
            ("campaign: c\n\(apns)\npush:\n  type: liveactivity\n  broadcast: {}\n  \(Self.update)", 5,
             "push.broadcast needs channels: a list in push.broadcast.channels, or an audience with audience.channel_field"),
            ("campaign: c\naudience: { files: [../data/channels.csv] }\n\(apns)\npush:\n  type: liveactivity\n  broadcast: {}\n  \(Self.update)", 2,
             "audience.channel_field is required for a broadcast audience"),
            ("campaign: c\naudience: { files: [../data/channels.csv], channel_field: channel, token_field: t }\n\(apns)\npush: { type: liveactivity, \(Self.update) }", 2,
             "audience.token_field and audience.channel_field are alternatives"),
            ("campaign: c\n\(audience)\n\(apns)\npush:\n  type: liveactivity\n  collapse_id: score\n  \(Self.update)", 6,
             "push.collapse_id does not apply to a broadcast"),
            ("campaign: c\n\(audience)\n\(apns)\npush: { type: liveactivity, \(Self.update) }\nschedule: { local_time: { from: \"09:00\", to: \"21:00\" } }", 5,
             "schedule does not apply to a broadcast: a channel has no local time"),
            ("campaign: c\n\(audience)\n\(apns)\npush: { type: liveactivity, \(Self.update) }\nthrottle:\n  frequency_cap: { category: c, limits: [{ max: 1, per: 1h }] }", 6,
             "throttle.frequency_cap does not apply to a broadcast"),
            ("campaign: c\n\(apns)\npush: { type: liveactivity, \(Self.update) }", nil, "audience is required"),
            ("campaign: c\n\(audience)\n\(apns)\npush: { \(Self.update) }", 2,
             "audience.channel_field makes a broadcast, which sends Live Activity updates to channels: push.type must be liveactivity, not alert"),
            ("campaign: c\naudience: { files: [../data/channels.csv], channel_field: channel, registered_at_field: r }\n\(apns)\npush: { type: liveactivity, \(Self.update) }", 2,
             "audience.registered_at_field does not apply to a broadcast"),
        ]
        for (text, line, message) in cases {
            let e = try #require(refusal(text), "refused: \(message)")
            #expect(e.message.hasPrefix(message), "\(e.message)")
            #expect(e.line == line, "\(message): line \(String(describing: e.line))")
        }
    }
}
