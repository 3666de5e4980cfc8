import Foundation
import HeraldTestSupport
import Testing

/// `herald run` with the libcurl shims engaged or off (`apns.libcurl_shims`, HERALD_LIBCURL_SHIMS),
/// and which engine carries the pushes (`apns.engine`, HERALD_APNS_ENGINE): the log says which, and
/// either way every recipient is sent once with its own fields.
@Suite(.serialized) struct LibcurlShimsRunTests {
    let dir = TemporaryDirectory("e2e-shims")
    static let count = 300

    func writeJob(name: String, shims: String?, engine: String? = nil) throws -> String {
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
            \(engine.map { "  engine: \($0)" } ?? "")
            push:
              template: { aps: { alert: "Hi" } }
            """)
    }

    /// This test process's environment without the switch, plus `extra`.
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["HERALD_LIBCURL_SHIMS"] = nil
        env["HERALD_APNS_ENGINE"] = nil
        return env.merging(extra) { _, new in new }
    }

    func runAndCheck(name: String, shims: String?, engine: String? = nil, environment: [String: String]) throws -> String {
        let job = try writeJob(name: name, shims: shims, engine: engine)
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
        let stderr = try runAndCheck(name: "shims-on", shims: nil, engine: "libcurl", environment: environment())
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

    @Test func theDefaultEngineIsNghttp2AndTheEnvironmentChoosesOverTheJob() throws {
        let nghttp2 = "engine nghttp2: pushes go through herald's own HTTP/2 client"
        let byDefault = try runAndCheck(name: "engine-default", shims: nil, environment: environment())
        #expect(byDefault.contains(nghttp2) && !byDefault.contains("libcurl shims engaged"), "\(byDefault)")
        // The job's libcurl_shims asks for libcurl; HERALD_APNS_ENGINE wins over that and over apns.engine.
        let envNghttp2 = try runAndCheck(name: "engine-env-nghttp2", shims: "on", engine: "libcurl",
                                         environment: environment(["HERALD_APNS_ENGINE": "nghttp2"]))
        #expect(envNghttp2.contains(nghttp2), "\(envNghttp2)")
        let envLibcurl = try runAndCheck(name: "engine-env-libcurl", shims: nil, environment: environment(["HERALD_APNS_ENGINE": "libcurl"]))
        #expect(envLibcurl.contains("libcurl shims engaged") && !envLibcurl.contains(nghttp2), "\(envLibcurl)")

        let job = try writeJob(name: "engine-env-bad", shims: nil)
        let bad = try ProcessRunner.run(ProcessRunner.heraldBinary, ["run", job, "--progress", "never"],
                                        environment: environment(["HERALD_APNS_ENGINE": "quic"]))
        #expect(bad.status == 2, "\(bad.stdout)\(bad.stderr)")
        #expect(bad.stderr.contains("HERALD_APNS_ENGINE: must be one of libcurl, nghttp2, not \"quic\""), "\(bad.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("out/engine-env-bad.ndjson")), "nothing sent")
    }
}
