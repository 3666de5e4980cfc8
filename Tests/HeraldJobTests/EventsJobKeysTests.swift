import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// The `events` section: its keys, their defaults, and a message naming the line for each mistake.
@Suite struct EventsJobKeysTests {
    let dir = TemporaryDirectory("job-events")

    func load(_ events: String) throws -> JobSpec {
        try dir.write("a.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        let path = try dir.write("jobs/job.yaml", """
            campaign: c
            audience: { files: [../a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template: { aps: { alert: "x" } } }
            events: \(events)
            """)
        return try JobLoader.load(path: path)
    }

    @Test func keysAndDefaults() throws {
        let spec = try load("""
            { url: "https://api.example.com/herald", file: ../out/events.ndjson, batch: 200, flush: 2s, timeout: 30s,
                      headers_env: { Authorization: EVENTS_TOKEN, X-Tenant: TENANT } }
            """)
        let e = try #require(spec.events)
        #expect(e.url == "https://api.example.com/herald" && e.file == dir.file("out/events.ndjson"))
        #expect(e.batch == 200 && e.flush == 2 && e.timeout == 30)
        #expect(e.headersEnv == [.init(name: "Authorization", variable: "EVENTS_TOKEN"), .init(name: "X-Tenant", variable: "TENANT")])
        let plain = try #require(try load("{ file: events.ndjson }").events)
        #expect(plain.url == nil && plain.batch == 500 && plain.flush == 5 && plain.timeout == 10 && plain.headersEnv.isEmpty)
        #expect(try load("{ url: \"http://127.0.0.1:8080/e\" }").events?.url == "http://127.0.0.1:8080/e")
    }

    @Test(arguments: [
        ("{ batch: 10 }", "events needs url (a webhook), file (an NDJSON file) or both"),
        ("{ url: \"ftp://x/e\" }", "events.url must be an http:// or https:// URL"),
        ("{ file: e.ndjson, batch: 0 }", "events.batch"),
        ("{ file: e.ndjson, flush: 0s }", "events.flush must be from 1s to 1h"),
        ("{ file: e.ndjson, timeout: 10m }", "events.timeout must be from 1s to 5m"),
        ("{ file: e.ndjson, headers_env: { Authorization: T } }", "events.headers_env applies to events.url, which is not set"),
        ("{ url: \"http://h/e\", headers_env: { Authorization: \"Bearer abc\" } }", "must name an environment variable"),
        ("{ url: \"http://h/e\", headers_env: { \"Bad Header\": T } }", "is not an HTTP header name"),
        ("{ url: \"http://h/e\", headers_env: { Content-Type: T } }", "herald sets this header itself"),
        ("{ url: \"http://h/e\", headers_env: [T] }", "events.headers_env must map header names"),
        ("{ url: \"http://h/e\", retries: 3 }", "unknown key \"events.retries\""),
    ])
    func mistakesAreNamedWithTheirLine(events: String, message: String) throws {
        let error = try #require(throws: JobError.self) { try load(events) }
        #expect(error.description.contains(message), "\(error)")
        #expect(error.description.contains("line 5"), "\(error)")
    }
}
