import Foundation
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `herald channels` on the built binary against `herald sim --management-port`: create, list,
/// show and delete with the job's key and bundle id, text and JSON, and each refusal with its
/// exit code (2 a request that cannot succeed as given, 3 a fatal answer, 4 try again).
@Suite(.serialized) struct ChannelsCommandTests {
    let dir = TemporaryDirectory("e2e-channels")
    let key = TestKey()

    let herald = Herald()

    /// A simulator with a management port and a job pointing at both of its ports.
    func start(limit: Int = 3) throws -> (SimulatorProcess, String) {
        let sim = try SimulatorProcess(in: dir, trusting: key, bundleId: "com.example.scores", management: true,
                                       arguments: ["--channel-limit", String(limit)])
        return (sim, try job("com.example.scores", sim: sim).path)
    }

    /// A Live Activity job of no recipients (the channels are managed, not sent to) for `sim`, or the in-process simulator.
    func job(_ name: String, sim: SimulatorProcess?, _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        let keyFile = try key.writeP8(in: dir)
        return try TestJob(name, rows: ["token"]) {
            $0.campaign = "match"
            $0.apns.topic = "com.example.scores"
            if let sim {
                $0.apns.endpoint = "https://127.0.0.1:\(sim.port)"
                $0.apns.channelsEndpoint = "https://127.0.0.1:\(sim.managementPort ?? 0)"
                $0.apns.caFile = "../sim/ca.pem"
                $0.apns.keyFile = keyFile
            }
            $0.push.type = "liveactivity"
            $0.push.template = "{ aps: { event: update, timestamp: auto, content-state: {} } }"
            configure(&$0)
        }.write(in: dir)
    }

    func stop(_ sim: SimulatorProcess) { sim.stop() }

    @Test func channelsAreCreatedListedShownAndDeleted() throws {
        let (sim, job) = try start()
        defer { stop(sim) }
        let made = try herald(["channels", "create", job, "--storage-policy", "none"])
        #expect(made.status == 0, "\(made.stderr)")
        let id = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Data(base64Encoded: id) != nil, "the id alone on stdout, for scripts: \(made.stdout)")

        let json = try herald(["channels", "create", job, "--json"])
        let created = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let second = try #require(created["channel_id"] as? String)
        #expect(created["storage_policy"] as? String == "most-recent" && created["message_storage_policy"] as? Int == 1)
        #expect(created["bundle_id"] as? String == "com.example.scores" && (created["apns_request_id"] as? String)?.count == 36)

        let list = try herald(["channels", "list", job])
        #expect(list.status == 0 && list.stdout == "\(id)\n\(second)\n", "\(list.stdout)")
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(try herald(["channels", "list", job, "--json"]).stdout.utf8)) as? [String: Any])
        #expect(listed["channels"] as? [String] == [id, second])

        let show = try herald(["channels", "show", job, id])
        #expect(show.status == 0 && show.stdout.contains("storage policy  none (0)"), "\(show.stdout)")
        let gone = try herald(["channels", "delete", job, id])
        #expect(gone.status == 0 && gone.stdout == "deleted \(id)\n")
        #expect(try herald(["channels", "list", job]).stdout == "\(second)\n")

        // The request log has each management request, the provider token never.
        let log = try String(contentsOfFile: dir.file("sim/requests.ndjson"), encoding: .utf8)
        #expect(log.components(separatedBy: "\n").filter { $0.contains("/1/apps/com.example.scores/") }.count == 7)
        #expect(!log.contains("eyJ"), "no JWT in the log")
    }

    /// A broadcast job's audience lists channels, so its file cannot exist before they are made
    /// with the same job: `herald channels` reads no audience and does not ask for the file;
    /// `herald run` still does.
    @Test func channelsAreMadeBeforeTheAudienceThatNamesThem() throws {
        let (sim, _) = try start()
        defer { stop(sim) }
        let job = try job("com.example.scores", sim: sim) {
            $0.audience.files = ["../data/matchday.csv"]
            $0.audience.channelField = "channel"
        }
        let made = try herald(["channels", "create", job.path])
        #expect(made.status == 0, "\(made.stderr)")
        let id = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try herald(["channels", "list", job.path]).stdout == "\(id)\n")
        let run = try herald(["run", job.path])
        #expect(run.status == 2 && run.stderr.contains("audience file not found: ../data/matchday.csv"), "\(run.stderr)")
        _ = try dir.write("data/matchday.csv", "channel\n\(id)\n")
        let sent = try herald(["run", job.path])
        #expect(sent.status == 0, "\(sent.stderr)")
    }

    @Test func eachRefusalHasItsExitCode() throws {
        let (sim, job) = try start(limit: 1)
        defer { stop(sim) }
        #expect(try herald(["channels", "create", job]).status == 0)
        let full = try herald(["channels", "create", job])
        #expect(full.status == 3 && full.stderr.contains("CannotCreateChannelConfig") && full.stderr.contains("apns-request-id"), "\(full.stderr)")
        let unknown = try herald(["channels", "show", job, "dW5rbm93bg=="])
        #expect(unknown.status == 2 && unknown.stderr.contains("400 ChannelNotRegistered"), "\(unknown.stderr)")
        let bad = try herald(["channels", "delete", job, "not base64"])
        #expect(bad.status == 2 && bad.stderr.contains("BadChannelId"), "\(bad.stderr)")
        let policy = try herald(["channels", "create", job, "--storage-policy", "forever"])
        #expect(policy.status == 2 && policy.stderr.contains("--storage-policy must be none or most-recent"), "\(policy.stderr)")
        let down = try herald(["channels", "list", job, "--channels-endpoint", "https://127.0.0.1:1"])
        #expect(down.status == 4 && down.stderr.contains("try again"), "\(down.stderr)")

        // Another app's bundle id: a fatal answer, 3.
        let other = try self.job("other", sim: sim) { $0.apns.topic = "com.example.other" }.path
        let mismatch = try herald(["channels", "list", other])
        #expect(mismatch.status == 3 && mismatch.stderr.contains("403 TopicMismatch"), "\(mismatch.stderr)")
        // No management host known: a configuration error, 2, before any request.
        let simulated = try self.job("sim", sim: nil).path
        let inProcess = try herald(["channels", "list", simulated])
        #expect(inProcess.status == 2 && inProcess.stderr.contains("herald sim --management-port"), "\(inProcess.stderr)")
        let custom = try herald(["channels", "list", job, "--channels-endpoint", "ftp://x"])
        #expect(custom.status == 2 && custom.stderr.contains("channels_endpoint must be an https://host:port URL"), "\(custom.stderr)")
    }

    /// `apns.proxy` carries channel management too, through its CONNECT tunnel, with its credentials.
    @Test func channelRequestsGoThroughTheJobsProxy() throws {
        let (sim, _) = try start()
        defer { stop(sim) }
        let proxy = try ConnectProxy(credentials: ("herald", "pr0xy-s3cret"))
        defer { proxy.stop() }
        let proxied = try self.job("proxied", sim: sim) {
            $0.apns.proxy = "{ url: \(proxy.url), user_env: HERALD_TEST_PROXY_USER, password_env: HERALD_TEST_PROXY_PASSWORD }"
        }
        let made = try herald(["channels", "create", proxied.path], environment: ["HERALD_TEST_PROXY_USER": "herald", "HERALD_TEST_PROXY_PASSWORD": "pr0xy-s3cret"])
        #expect(made.status == 0, "\(made.stdout)\(made.stderr)")
        #expect(proxy.tunnels == 1, "through the job's proxy: \(proxy.tunnels) tunnels")
        #expect(!(made.stdout + made.stderr).contains("pr0xy-s3cret"))
    }

    @Test func helpNamesEverySubcommand() throws {
        let r = try herald(["channels", "--help"])
        #expect(r.status == 0)
        for word in ["create", "list", "show", "delete", "channels_endpoint", "Exit codes", "audience.channel_field"] { #expect(r.stdout.contains(word), "\(word)") }
        let create = try herald(["channels", "create", "--help"])
        #expect(create.stdout.contains("--storage-policy") && create.stdout.contains("--json") && create.stdout.contains("--channels-endpoint"))
    }
}
