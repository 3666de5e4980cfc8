import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// `apns.apps`, `apns.endpoints`, `apns.environment_fallback`, `audience.app_field` and
/// `audience.environment_field`: keys, defaults, and a message naming the key and its line for
/// each mistake.
@Suite struct AppsJobKeysTests {
    let dir = TemporaryDirectory("job-apps")

    func load(apns: String, audience: String = "{ files: [../a.csv], app_field: app }", push: String = "{ template: { aps: { alert: x } } }") throws -> JobSpec {
        try dir.write("a.csv", "token,app\n" + String(repeating: "ab", count: 32) + ",acme\n")
        try dir.write("AuthKey_KEY1111111.p8", "not read by the loader")
        try dir.write("AuthKey_KEY2222222.p8", "not read by the loader")
        try dir.write("partner.p12", "not read by the loader")
        let path = try dir.write("jobs/job.yaml", """
            campaign: c
            audience: \(audience)
            apns:
            \(apns)
            push: \(push)
            """)
        return try JobLoader.load(path: path)
    }

    static let threeApps = """
          endpoint: production
          apps:
            - name: acme
              topic: com.acme.app
              auth: { team_id: TEAM111111, key_id: KEY1111111, key_file: ../AuthKey_KEY1111111.p8 }
            - name: acme-ipad
              topic: com.acme.ipad
              auth: { team_id: TEAM111111, key_id: KEY1111111, key_file: ../AuthKey_KEY1111111.p8 }
              connections: 2
              streams_per_connection: 100
            - name: partner
              topic: com.partner.app
              certificate: { p12_file: ../partner.p12, password_env: PARTNER_P12_PASSWORD }
        """

    @Test func threeAppsOverTwoCredentials() throws {
        let spec = try load(apns: Self.threeApps + "\n  environment_fallback: true\n  endpoints: { sandbox: \"https://127.0.0.1:8444/\" }",
                            audience: "{ files: [../a.csv], app_field: app, environment_field: env }")
        #expect(spec.apns.apps.map(\.name) == ["acme", "acme-ipad", "partner"])
        #expect(spec.apns.apps.map(\.topic) == ["com.acme.app", "com.acme.ipad", "com.partner.app"])
        #expect(spec.apns.apps[0].auth?.teamId == "TEAM111111" && spec.apns.apps[2].certificate?.passwordEnv == "PARTNER_P12_PASSWORD")
        #expect(spec.apns.apps[1].connections == 2 && spec.apns.apps[1].streamsPerConnection == 100 && spec.apns.apps[0].connections == nil)
        #expect(spec.audience.appField == "app" && spec.audience.environmentField == "env")
        #expect(spec.apns.environmentFallback && spec.isRouted)
        #expect(spec.apns.endpoints == [.sandbox: "https://127.0.0.1:8444"])
        #expect(spec.apns.baseURL(for: .sandbox) == "https://127.0.0.1:8444")
        #expect(spec.apns.baseURL(for: .production) == "https://api.push.apple.com")
        #expect(spec.apns.defaultEnvironment == .production)
    }

    @Test func aJobWithATopicIsOneAppAsBefore() throws {
        let spec = try load(apns: "  endpoint: sandbox\n  topic: com.acme.app\n  auth: { team_id: TEAM111111, key_id: KEY1111111, key_env: P8 }",
                            audience: "{ files: [../a.csv] }")
        #expect(spec.apns.apps.isEmpty && !spec.isRouted)
        #expect(spec.apns.appList.map(\.topic) == ["com.acme.app"] && spec.apns.appList[0].name == "")
        #expect(spec.apns.appList[0].auth?.key == .environment("P8"))
        #expect(spec.apns.defaultEnvironment == .sandbox && spec.apns.baseURL(for: .production) == "https://api.push.apple.com")
        // An environment field alone routes rows between environments, for the one app.
        let env = try load(apns: "  endpoint: simulator\n  topic: com.acme.app", audience: "{ files: [../a.csv], environment_field: env }")
        #expect(env.isRouted && env.apns.baseURL(for: .sandbox) == nil)
    }

    @Test(arguments: [
        // (apns, audience, the message's start, line)
        ("  endpoint: production\n  apps:\n    - { name: a, topic: com.a, auth: { team_id: TEAM111111, key_id: KEY1111111, key_env: P8 } }\n    - { name: b, topic: com.b, auth: { team_id: TEAM111111, key_id: KEY1111111, key_env: P8 } }",
         "{ files: [../a.csv] }", "audience.app_field is required with more than one app in apns.apps", 2),
        ("  endpoint: simulator\n  topic: com.a", "{ files: [../a.csv], app_field: app }", "audience.app_field needs apns.apps", 2),
        ("  endpoint: simulator\n  topic: com.a\n  apps:\n    - { name: a, topic: com.a }", "{ files: [../a.csv], app_field: app }",
         "apns.topic and apns.apps are alternatives", 5),
        ("  endpoint: simulator\n  apps: []", "{ files: [../a.csv], app_field: app }", "apns.apps must be a list of apps", 5),
        ("  endpoint: simulator\n  apps:\n    - { name: a, topic: com.a }\n    - { name: a, topic: com.b }", "{ files: [../a.csv], app_field: app }",
         "apns.apps[1].name \"a\" is given to two apps", 7),
        ("  endpoint: simulator\n  apps:\n    - { name: a, topic: com.a }\n    - { name: b, topic: com.a }", "{ files: [../a.csv], app_field: app }",
         "apns.apps[1].topic com.a is already app a's", 7),
        ("  endpoint: simulator\n  apps:\n    - { name: \"a b\", topic: com.a }", "{ files: [../a.csv], app_field: app }",
         "apns.apps[0].name may contain only letters", 6),
        ("  endpoint: production\n  apps:\n    - { name: a, topic: com.a }", "{ files: [../a.csv], app_field: app }",
         "apns.apps[0].auth (or apns.apps[0].certificate) is required for endpoint production", 6),
        ("  endpoint: production\n  apps:\n    - { name: a, topic: com.a, auth: { team_id: TEAM111111, key_id: KEY1111111, key_env: P8 } }\n    - { name: b, topic: com.b, auth: { team_id: TEAM111111, key_id: KEY1111111, key_env: OTHER } }",
         "{ files: [../a.csv], app_field: app }", "apns.apps[1].auth names key KEY1111111 of team TEAM111111 as app a does", 7),
        ("  endpoint: simulator\n  apps:\n    - { name: a, topic: com.a, colour: red }", "{ files: [../a.csv], app_field: app }",
         "apns.apps[0]", 6),
        ("  endpoint: \"https://127.0.0.1:9\"\n  topic: com.a\n  auth: { team_id: TEAM111111, key_id: KEY1111111, key_env: P8 }",
         "{ files: [../a.csv], environment_field: env }", "audience.environment_field needs endpoint: production, sandbox or simulator", 2),
        ("  endpoint: simulator\n  topic: com.a\n  endpoints: { sandbox: \"https://127.0.0.1:9\" }", "{ files: [../a.csv] }",
         "apns.endpoints needs endpoint: production or sandbox", 6),
        ("  endpoint: production\n  topic: com.a\n  auth: { team_id: TEAM111111, key_id: KEY1111111, key_env: P8 }\n  endpoints: { staging: \"https://127.0.0.1:9\" }",
         "{ files: [../a.csv] }", "apns.endpoints", 7),
        ("  endpoint: production\n  topic: com.a\n  auth: { team_id: TEAM111111, key_id: KEY1111111, key_env: P8 }\n  endpoints: { sandbox: \"http://127.0.0.1:9\" }",
         "{ files: [../a.csv] }", "apns.endpoints.sandbox must be an https://host:port URL", 7),
        ("  endpoint: simulator\n  apps:\n    - { name: a, topic: com.a.voip }", "{ files: [../a.csv], app_field: app }",
         "apns.apps[0].topic", 6),
    ] as [(String, String, String, Int)])
    func mistakesNameTheKeyAndLine(_ apns: String, _ audience: String, _ message: String, _ line: Int) throws {
        let error = try #require(throws: JobError.self) { try load(apns: apns, audience: audience) }
        #expect(error.description.contains(message), "\(error)")
        #expect(error.description.contains("line \(line)") || error.description.contains(":\(line):"), "\(error)")
    }

    /// A broadcast sends for many apps too (docs/many-apps.md#broadcasts); a channel belongs to one
    /// environment, so `environment_fallback` still does not apply.
    @Test func manyAppsMayBroadcastWithoutEnvironmentFallback() throws {
        let apps = "  endpoint: production\n  apps:\n    - { name: a, topic: com.a, auth: { team_id: TEAM111111, key_id: KEY1111111, key_env: P8 } }\n"
            + "    - { name: b, topic: com.b, auth: { team_id: TEAM111111, key_id: KEY1111111, key_env: P8 } }"
        let push = "{ type: liveactivity, broadcast: {}, template: { aps: { event: update, timestamp: 1, content-state: {} } } }"
        let spec = try load(apns: apps, audience: "{ files: [../a.csv], channel_field: token, app_field: app, environment_field: env }", push: push)
        #expect(spec.isBroadcast && spec.apns.apps.count == 2)
        let error = try #require(throws: JobError.self) {
            try load(apns: apps + "\n  environment_fallback: true", audience: "{ files: [../a.csv], channel_field: token, app_field: app }", push: push)
        }
        #expect(error.description.contains("apns.environment_fallback does not apply to a broadcast"), "\(error)")
        #expect(error.line == 8, "\(error)")
    }
}
