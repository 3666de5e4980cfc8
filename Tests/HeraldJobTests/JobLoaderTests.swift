import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

@Suite struct JobLoaderTests {
    let dir = TemporaryDirectory("job")

    func setup(_ job: String) throws -> String {
        try dir.write("samples/a.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        try dir.write("keys/AuthKey_ABC123DEFG.p8", "not read by the loader")
        return try dir.write("jobs/job.yaml", job)
    }

    static let minimal = """
        campaign: spring-sale-2026
        audience:
          files: [../samples/a.csv]
        apns:
          endpoint: sandbox
          topic: com.example.app
          auth: { team_id: DEF123GHIJ, key_id: ABC123DEFG, key_file: ../keys/AuthKey_ABC123DEFG.p8 }
        push:
          template: { aps: { alert: { title: "Hi {{first_name}}", body: "x" }, badge: 1 } }
        """

    @Test func minimalJobWithDefaults() throws {
        let spec = try JobLoader.load(path: try setup(Self.minimal))
        #expect(spec.campaign == "spring-sale-2026")
        #expect(spec.audience.files == [AudienceFile(name: "../samples/a.csv", path: dir.file("samples/a.csv"))])
        #expect(spec.audience.tokenField == "token")
        #expect(spec.apns.endpoint == .sandbox)
        #expect(spec.apns.auth == TokenAuthSpec(teamId: "DEF123GHIJ", keyId: "ABC123DEFG", key: .file(dir.file("keys/AuthKey_ABC123DEFG.p8"))))
        #expect(spec.apns.connections == 1)
        #expect(spec.push.type == .alert && spec.push.priority == 10)
        // Defaults: state/<campaign>.sqlite and reports/<campaign>/ beside the jobs folder.
        #expect(spec.statePath == dir.file("state/spring-sale-2026.sqlite"))
        #expect(spec.reports.dir == dir.file("reports") + "/{campaign}", "resolved per run: {campaign} is the run's resolved name")
        #expect(spec.retry == RetrySpec(maxAttempts: 5, giveUpAfter: 86_400))
        // Template keeps the written key order.
        #expect(spec.push.template.compactText == #"{"aps":{"alert":{"title":"Hi {{first_name}}","body":"x"},"badge":1}}"#)
    }

    @Test func pathsResolveAgainstTheJobFileNotTheWorkingDirectory() throws {
        let path = try setup(Self.minimal + "\nstate: ../var/s.sqlite\nreports: { dir: out }\n")
        let cwd = FileManager.default.currentDirectoryPath
        #expect(FileManager.default.changeCurrentDirectoryPath("/"), "the test must run from elsewhere to prove anything")
        defer { _ = FileManager.default.changeCurrentDirectoryPath(cwd) }
        let spec = try JobLoader.load(path: path)
        #expect(spec.statePath == dir.file("var/s.sqlite"))
        #expect(spec.reports.dir == dir.file("jobs/out"))
    }

    @Test func missingJobFile() {
        #expect(throws: JobError(file: "/nonexistent/job.yaml", line: nil, "job file not found")) {
            try JobLoader.load(path: "/nonexistent/job.yaml")
        }
    }

    @Test func unknownKeyNamesTheKeyAndLine() throws {
        let path = try setup(Self.minimal.replacingOccurrences(of: "  topic: com.example.app", with: "  topic: com.example.app\n  topik: oops"))
        let error = try #require(throws: JobError.self) { try JobLoader.load(path: path) }
        #expect(error.line == 7)
        #expect(error.description.contains("unknown key \"apns.topik\""))
        #expect(error.description.hasPrefix(path))
    }

    @Test func unknownTopLevelKey() throws {
        let path = try setup(Self.minimal + "\nthrotle: { rate: 5 }\n")
        let error = try #require(throws: JobError.self) { try JobLoader.load(path: path) }
        #expect(error.description.contains("unknown key \"throtle\""))
    }

    @Test func missingAudienceFileNamesIt() throws {
        let path = try setup(Self.minimal.replacingOccurrences(of: "../samples/a.csv", with: "../samples/missing.csv.gz"))
        let error = try #require(throws: JobError.self) { try JobLoader.load(path: path) }
        #expect(error.line == 3)
        #expect(error.message.contains("audience file not found: ../samples/missing.csv.gz"))
    }

    @Test func missingKeyFileNamesIt() throws {
        let path = try setup(Self.minimal.replacingOccurrences(of: "AuthKey_ABC123DEFG.p8 }", with: "AuthKey_NOPE.p8 }"))
        let error = try #require(throws: JobError.self) { try JobLoader.load(path: path) }
        #expect(error.message.contains("key file that does not exist: ../keys/AuthKey_NOPE.p8"))
    }

    @Test func aProxyURLIsParsedAsAnHTTPProxy() throws {
        let path = try setup(Self.minimal.replacingOccurrences(of: "  auth: {", with: "  proxy: http://proxy:3128\n  auth: {"))
        #expect(try JobLoader.load(path: path).apns.proxy == .http(url: "http://proxy:3128", userEnv: nil, passwordEnv: nil))
    }

    @Test func badValuesAreRejectedWithTheRule() throws {
        let cases: [(String, String, String)] = [
            ("  endpoint: sandbox", "  endpoint: staging", "apns.endpoint must be production, sandbox, simulator or an https://host:port URL"),
            ("campaign: spring-sale-2026", "campaign: spring sale/2026", "campaign may contain only"),
            ("campaign: spring-sale-2026", "campaign: daily-{day}", "campaign may contain only"),
            ("push:\n", "push:\n  type: background\n  priority: 10\n", "apns-push-type"),
            ("team_id: DEF123GHIJ", "team_id: SHORT", "team_id must be Apple's 10-character identifier"),
        ]
        for (from, to, expected) in cases {
            let path = try setup(Self.minimal.replacingOccurrences(of: from, with: to))
            let error = try #require(throws: JobError.self) { try JobLoader.load(path: path) }
            if expected == "apns-push-type" {
                #expect(error.message.contains("must be 5 for background pushes"), "\(error)")
            } else {
                #expect(error.message.contains(expected), "\(error)")
            }
        }
    }

    @Test func periodicCampaignKeepsItsTemplateForTheStateFile() throws {
        let path = try setup(Self.minimal.replacingOccurrences(of: "campaign: spring-sale-2026", with: "campaign: daily-{date}"))
        let spec = try JobLoader.load(path: path)
        #expect(spec.campaign == "daily-{date}")
        #expect(spec.statePath == dir.file("state/daily-{date}.sqlite"), "one state file holds every period's runs")
        #expect(CampaignName(spec.campaign).isPeriodic)
    }

    @Test func durationsAndExpirations() throws {
        let path = try setup(Self.minimal + "\n  expiration: 1h\n  collapse_id: none\nretry: { max_attempts: 3, give_up_after: 2d }\n")
        let spec = try JobLoader.load(path: path)
        #expect(spec.push.expiration == .relative(3600))
        #expect(spec.push.collapseId == CollapseIdPolicy.none)
        #expect(spec.retry == RetrySpec(maxAttempts: 3, giveUpAfter: 172_800))
    }

    @Test func invalidYAMLHasALine() throws {
        let path = try setup("campaign: x\naudience: [\n")
        let error = try #require(throws: JobError.self) { try JobLoader.load(path: path) }
        #expect(error.message.hasPrefix("not valid YAML"))
        #expect(error.line != nil)
    }

    @Test func overridesWin() throws {
        let path = try setup(Self.minimal)
        let spec = try JobLoader.load(path: path, overrides: JobOverrides(statePath: "/tmp/x.sqlite", reportsDir: "/tmp/r", endpoint: "simulator"))
        #expect(spec.statePath == "/tmp/x.sqlite")
        #expect(spec.reports.dir == "/tmp/r")
        #expect(spec.apns.endpoint == .simulator)
    }
}
