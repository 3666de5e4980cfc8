import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// `apns.certificate` and `apns.proxy` in the job file: shapes, files, and secrets kept out.
@Suite struct ConnectionKeysTests {
    let dir = TemporaryDirectory("job-connect")

    func load(apns extra: String, auth: Bool = false, endpoint: String = "production") throws -> JobSpec {
        try dir.write("samples/a.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        try dir.write("keys/push.p12", "not read by the loader")
        try dir.write("keys/push.pem", "not read by the loader")
        try dir.write("keys/push.key", "not read by the loader")
        try dir.write("keys/AuthKey_ABC123DEFG.p8", "not read by the loader")
        let path = try dir.write("jobs/job.yaml", """
            campaign: c
            audience: { files: [../samples/a.csv] }
            apns:
              endpoint: \(endpoint)
              topic: com.example.app
            \(auth ? "  auth: { team_id: DEF123GHIJ, key_id: ABC123DEFG, key_file: ../keys/AuthKey_ABC123DEFG.p8 }\n" : "")\(extra)
            push:
              template: { aps: { alert: "x" } }
            """)
        return try JobLoader.load(path: path)
    }

    func failure(apns extra: String, auth: Bool = false, endpoint: String = "production") throws -> JobError {
        try #require(throws: JobError.self) { try load(apns: extra, auth: auth, endpoint: endpoint) }
    }

    @Test func certificateAsP12OrPEMReplacesAuth() throws {
        let p12 = try load(apns: "  certificate: { p12_file: ../keys/push.p12, password_env: APNS_P12_PASSWORD }")
        #expect(p12.apns.auth == nil)
        #expect(p12.apns.certificate == .p12(path: dir.file("keys/push.p12"), passwordEnv: "APNS_P12_PASSWORD"))
        let pem = try load(apns: "  certificate: { cert_file: ../keys/push.pem, key_file: ../keys/push.key }")
        #expect(pem.apns.certificate == .pem(certificatePath: dir.file("keys/push.pem"), keyPath: dir.file("keys/push.key"), passwordEnv: nil))
    }

    /// The libcurl engine and its shims are gone; their keys still load (job keys are never removed
    /// without notice), each with a warning naming its file, line and what replaced it.
    @Test func theObsoleteEngineKeysLoadWithAWarningThatNamesTheReplacement() throws {
        #expect(try load(apns: "", auth: true).warnings.isEmpty)
        #expect(try load(apns: "  engine: nghttp2", auth: true).warnings.isEmpty, "nghttp2 is what every job gets: no warning")
        let libcurl = try load(apns: "  engine: libcurl", auth: true).warnings
        #expect(libcurl.count == 1 && libcurl[0].hasSuffix("jobs/job.yaml line 7: apns.engine libcurl is no longer available: every push goes through "
                                                           + "herald's own HTTP/2 connection on nghttp2 (docs/delivery.md); the key is ignored"), "\(libcurl)")
        for value in ["on", "off"] {
            let shims = try load(apns: "  libcurl_shims: \(value)\n  engine: libcurl", auth: true).warnings
            #expect(shims.count == 2 && shims.contains { $0.contains("line 7: apns.libcurl_shims no longer does anything (the libcurl engine was removed)") },
                    "\(shims)")
        }
        // A value neither engine ever had is still a mistake, named as one.
        let unknown = try failure(apns: "  engine: nio", auth: true)
        #expect(unknown.message.contains("apns.engine must be one of libcurl, nghttp2, not \"nio\""), "\(unknown)")
        let maybe = try failure(apns: "  libcurl_shims: maybe", auth: true)
        #expect(maybe.message.contains("apns.libcurl_shims must be one of on, off, not \"maybe\""), "\(maybe)")
        #expect(JobOverrides.obsoleteVariableWarnings(["HERALD_APNS_ENGINE": "libcurl", "HERALD_LIBCURL_SHIMS": "", "PATH": "/bin"])
                == ["HERALD_APNS_ENGINE is no longer read and is ignored: every push goes through herald's own HTTP/2 connection on nghttp2 "
                    + "(the libcurl engine and its shims were removed; docs/delivery.md)"])
    }

    /// `apns.ping_interval` and `apns.ping_timeout` (docs/delivery.md, "Keepalive and idle close").
    @Test func pingIntervalAndTimeoutAreDurationsOfAtLeastASecond() throws {
        let defaults = try load(apns: "", auth: true).apns
        #expect(defaults.pingInterval == 60 && defaults.pingTimeout == 15)
        let set = try load(apns: "  ping_interval: 2m\n  ping_timeout: 5s", auth: true).apns
        #expect(set.pingInterval == 120 && set.pingTimeout == 5)
        // With `auth`, `extra` starts on the job's seventh line.
        let zero = try failure(apns: "  ping_interval: 30s\n  ping_timeout: 0s", auth: true)
        #expect(zero.description == "\(dir.file("jobs/job.yaml")) line 8: apns.ping_timeout must be at least 1s", "\(zero)")
        let word = try failure(apns: "  ping_interval: often", auth: true)
        #expect(word.line == 7 && word.message == "apns.ping_interval must be a duration such as 90s, 15m, 24h or 7d", "\(word)")
    }

    @Test func certificateMistakesNameTheField() throws {
        let cases: [(String, Bool, String, String)] = [
            ("  certificate: { p12_file: ../keys/push.p12 }", true, "production", "apns.certificate and apns.auth are alternatives"),
            ("  certificate: { p12_file: ../keys/missing.p12 }", false, "production", "apns.certificate.p12_file names a file that does not exist or cannot be read: ../keys/missing.p12"),
            ("  certificate: { cert_file: ../keys/push.pem }", false, "production", "apns.certificate.cert_file needs key_file"),
            ("  certificate: { p12_file: ../keys/push.p12, cert_file: ../keys/push.pem, key_file: ../keys/push.key }", false, "production", "not both"),
            ("  certificate: { password_env: X }", false, "production", "apns.certificate needs p12_file, or cert_file and key_file"),
            ("  certificate: { p12_file: ../keys/push.p12, password_env: hunter2! }", false, "production", "must name an environment variable"),
            ("  certificate: { p12_file: ../keys/push.p12, password: hunter2 }", false, "production", "unknown key \"apns.certificate.password\""),
            ("  certificate: { p12_file: ../keys/push.p12 }", false, "simulator", "needs a real endpoint"),
            ("", false, "production", "apns.auth (or apns.certificate) is required"),
        ]
        for (extra, auth, endpoint, expected) in cases {
            let error = try failure(apns: extra, auth: auth, endpoint: endpoint)
            #expect(error.message.contains(expected), "\(error)")
            #expect(!error.description.contains("hunter2"), "\(error)")
        }
    }

    @Test func proxyForms() throws {
        #expect(try load(apns: "  proxy: http://10.0.0.1:3128", auth: true).apns.proxy == .http(url: "http://10.0.0.1:3128", userEnv: nil, passwordEnv: nil))
        #expect(try load(apns: "  proxy: http://proxy.internal", auth: true).apns.proxy == .http(url: "http://proxy.internal:80", userEnv: nil, passwordEnv: nil))
        #expect(try load(apns: "  proxy: none", auth: true).apns.proxy == .direct)
        #expect(try load(apns: "", auth: true).apns.proxy == nil)
        #expect(try load(apns: "  proxy: { url: http://p:8080, user_env: PU, password_env: PP }", auth: true).apns.proxy
                == .http(url: "http://p:8080", userEnv: "PU", passwordEnv: "PP"))
        // SOCKS5: herald resolves (socks5://) or the proxy does (socks5h://); 1080 unless a port is given.
        #expect(try load(apns: "  proxy: socks5://10.0.0.1", auth: true).apns.proxy == .socks(url: "socks5://10.0.0.1:1080", userEnv: nil, passwordEnv: nil))
        #expect(try load(apns: "  proxy: { url: \"SOCKS5H://[::1]:9050\", user_env: PU, password_env: PP }", auth: true).apns.proxy
                == .socks(url: "socks5h://[::1]:9050", userEnv: "PU", passwordEnv: "PP"))
    }

    @Test func proxyMistakesNeverEchoCredentials() throws {
        let cases: [(String, String)] = [
            ("  proxy: http://bob:hunter2@p:8080", "must not carry credentials in its URL (http://…@p:8080)"),
            ("  proxy: https://p:8443", "apns.proxy: https:// proxies are not supported; use http://, socks5:// or socks5h://"),
            ("  proxy: socks4://p:1080", "apns.proxy: socks4:// proxies are not supported; use http://, socks5:// or socks5h://"),
            ("  proxy: { url: \"https://p:8443\", user_env: PU, password_env: PP }", "https:// proxies are not supported"),
            ("  proxy: socks5h://bob:hunter2@p:1080", "must not carry credentials in its URL (socks5h://…@p:1080)"),
            ("  proxy: p:8080", "must be a proxy URL (http://, socks5:// or socks5h://)"),
            ("  proxy: http://p:8080/path", "with no path"),
            ("  proxy: { url: http://p:8080, user_env: PU }", "needs both user_env and password_env"),
            ("  proxy: { url: http://p:8080, user: bob }", "unknown key \"apns.proxy.user\""),
            ("  proxy: [http://p:8080]", "apns.proxy must be"),
        ]
        for (extra, expected) in cases {
            let error = try failure(apns: extra, auth: true)
            #expect(error.message.contains(expected), "\(error)")
            #expect(!error.description.contains("hunter2"), "\(error)")
            #expect(error.line != nil, "\(error)")
        }
    }
}
