import Foundation
import HeraldTestSupport
import Testing

/// `herald run` with the libcurl shims engaged or off (`apns.libcurl_shims`, HERALD_LIBCURL_SHIMS):
/// the log says which, and either way every recipient is sent once with its own fields.
@Suite(.serialized) struct LibcurlShimsRunTests {
    let dir = TemporaryDirectory("e2e-shims")
    static let count = 300

    func writeJob(name: String, shims: String?) throws -> String {
        var rows = ["token"]
        for i in 1...Self.count { rows.append(String(format: "%064x", i)) }
        try dir.write("data/audience.csv", rows.joined(separator: "\n") + "\n")
        return try dir.write("jobs/\(name).yaml", """
            campaign: \(name)
            audience: { files: [../data/audience.csv] }
            apns:
              endpoint: simulator
              topic: com.example.app
              streams_per_connection: 50
              simulator: { log: ../out/\(name).ndjson }
            \(shims.map { "  libcurl_shims: \($0)" } ?? "")
            push:
              template: { aps: { alert: "Hi" } }
            """)
    }

    /// This test process's environment without the switch, plus `extra`.
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["HERALD_LIBCURL_SHIMS"] = nil
        return env.merging(extra) { _, new in new }
    }

    func runAndCheck(name: String, shims: String?, environment: [String: String]) throws -> String {
        let job = try writeJob(name: name, shims: shims)
        let r = try ProcessRunner.run(ProcessRunner.heraldBinary, ["run", job, "--log-level", "info", "--progress", "never"],
                                      environment: environment)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let log = try String(contentsOfFile: dir.file("out/\(name).ndjson"), encoding: .utf8).split(separator: "\n")
        var seen = Set<String>()
        for line in log {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let headers = o["headers"] as? [String: String] ?? [:]
            #expect(o["status"] as? Int == 200 && headers["apns-topic"] == "com.example.app" && headers["apns-id"] != nil, "\(line)")
            seen.insert(o["token"] as? String ?? "")
        }
        #expect(log.count == Self.count && seen.count == Self.count, "each token once (\(log.count) requests)")
        return r.stderr
    }

    @Test func theVerifiedLibcurlEngagesEveryShimAndSaysSo() throws {
        let stderr = try runAndCheck(name: "shims-on", shims: nil, environment: environment())
        #expect(stderr.contains("libcurl shims engaged: closed_streams, coalesced_writes, request_headers, response_headers"), "\(stderr)")
    }

    @Test func theJobTurnsThemOff() throws {
        let stderr = try runAndCheck(name: "shims-job-off", shims: "off", environment: environment())
        #expect(stderr.contains("libcurl shims off (apns.libcurl_shims: off): requests go through plain libcurl"), "\(stderr)")
    }

    @Test func theEnvironmentWinsOverTheJob() throws {
        let stderr = try runAndCheck(name: "shims-env-off", shims: "on", environment: environment(["HERALD_LIBCURL_SHIMS": "off"]))
        #expect(stderr.contains("libcurl shims off (HERALD_LIBCURL_SHIMS=off)"), "\(stderr)")
    }
}
