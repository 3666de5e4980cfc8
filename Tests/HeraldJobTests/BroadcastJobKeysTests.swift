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

    /// Two apps of `apns.apps` for the many-apps cases (docs/many-apps.md#broadcasts).
    static let twoApps = """
        apns:
          endpoint: simulator
          apps:
            - { name: acme, topic: com.acme.app }
            - { name: partner, topic: com.partner.app }
        """

    /// With `apns.apps`, `push.broadcast.channels` maps each app's name to its channels: each
    /// channel keeps its app and its own line, in the order written.
    @Test func channelsListedPerAppKeepTheirApp() throws {
        let spec = try load("""
            campaign: c
            \(Self.twoApps)
            push:
              type: liveactivity
              broadcast:
                channels:
                  acme: [bWF0Y2gtNDI=, "dHN0LXNyY2gtY2hubA=="]
                  partner:
                    - bWF0Y2gtNDI=
              \(Self.update)
            """)
        #expect(spec.isBroadcast && spec.audience.files.isEmpty && spec.audience.appField == nil)
        #expect(spec.push.broadcast?.channels == [.init(id: "bWF0Y2gtNDI=", line: 11, app: "acme"), .init(id: "dHN0LXNyY2gtY2hubA==", line: 11, app: "acme"),
                                                  .init(id: "bWF0Y2gtNDI=", line: 13, app: "partner")])
        // One app of apns.apps: the plain list is its channels, as the mapping naming it is.
        for channels in ["[bWF0Y2gtNDI=]", "{ acme: [bWF0Y2gtNDI=] }"] {
            let one = try load("""
                campaign: c
                apns: { endpoint: simulator, apps: [{ name: acme, topic: com.acme.app }] }
                push: { type: liveactivity, broadcast: { channels: \(channels) }, \(Self.update) }
                """)
            #expect(one.push.broadcast?.channels.map(\.id) == ["bWF0Y2gtNDI="], "\(channels)")
        }
    }

    /// Each mistake in the mapping form names the key and its line (exit 2).
    @Test func channelsPerAppMistakesNameTheKeyAndLine() throws {
        let push = "push:\n  type: liveactivity\n  \(Self.update)\n  broadcast:\n    channels:"
        let cases: [(String, Int, String)] = [
            ("campaign: c\n\(Self.twoApps)\n\(push) [bWF0Y2gtNDI=]", 11,
             "push.broadcast.channels must name each channel's app with more than one app in apns.apps: a mapping such as { acme: [...], partner: [...] }"),
            ("campaign: c\n\(Self.twoApps)\n\(push)\n      acme: [bWF0Y2gtNDI=]\n      parnter: [bWF0Y2gtNDI=]", 13,
             "push.broadcast.channels.parnter: \"parnter\" is not one of apns.apps: acme, partner"),
            ("campaign: c\n\(Self.twoApps)\n\(push)\n      acme: []", 12, "push.broadcast.channels.acme lists no channel"),
            ("campaign: c\n\(Self.twoApps)\n\(push)\n      acme: [bWF0Y2gtNDI=]\n      partner:\n        - bWF0Y2gtNDI=\n        - bWF0Y2gtNDI=", 15,
             "push.broadcast.channels.partner[1] lists bWF0Y2gtNDI= a second time"),
            ("campaign: c\n\(Self.twoApps)\n\(push)\n      acme: [not base64!]", 12, "push.broadcast.channels.acme[0] is not a channel id"),
            ("campaign: c\n\(Self.twoApps)\n\(push)\n      acme: bWF0Y2gtNDI=", 12, "push.broadcast.channels.acme must be a list of channel ids"),
            ("campaign: c\n\(Self.twoApps)\n\(push) {}", 11, "push.broadcast.channels lists no channel"),
            ("campaign: c\napns: { endpoint: simulator, topic: com.example.app }\n\(push) { acme: [bWF0Y2gtNDI=] }", 7,
             "push.broadcast.channels names apps, and the job has one app (apns.topic)"),
            ("campaign: c\n\(Self.twoApps)\n  environment_fallback: true\n\(push)\n      acme: [bWF0Y2gtNDI=]", 7,
             "apns.environment_fallback does not apply to a broadcast"),
        ]
        for (text, line, message) in cases {
            let e = try #require(refusal(text), "refused: \(message)")
            #expect(e.message.hasPrefix(message), "\(e.message)")
            #expect(e.line == line, "\(message): line \(String(describing: e.line))")
        }
    }

    /// A broadcast audience over several apps and both environments: each row's channel goes to
    /// its app (`audience.app_field`) and environment (`audience.environment_field`).
    @Test func aBroadcastAudienceMayNameEachRowsAppAndEnvironment() throws {
        try dir.write("data/apps.csv", "channel,app,env\nbWF0Y2gtNDI=,acme,sandbox\n")
        let spec = try JobLoader.load(path: try dir.write("jobs/apps.yaml", """
            campaign: c
            audience: { files: [../data/apps.csv], channel_field: channel, app_field: app, environment_field: env }
            apns:
              endpoint: production
              apps:
                - { name: acme, topic: com.acme.app, auth: { team_id: TEAM111111, key_id: KEY1111111, key_env: ACME_P8 } }
                - { name: partner, topic: com.partner.app, auth: { team_id: TEAM222222, key_id: KEY2222222, key_env: PARTNER_P8 } }
            push: { type: liveactivity, \(Self.update) }
            """))
        #expect(spec.isBroadcast && spec.isRouted && spec.audience.appField == "app" && spec.audience.environmentField == "env")
    }
}

