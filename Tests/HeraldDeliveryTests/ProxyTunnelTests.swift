import Foundation
import HeraldCore
@testable import HeraldDelivery
import Testing

/// Which proxy the nghttp2 engine tunnels through: the job's, or the environment's as libcurl
/// reads it (https_proxy, HTTPS_PROXY, all_proxy, ALL_PROXY; no_proxy), and never a credential in
/// a message. The tunnel itself is tested against a real CONNECT proxy in Nghttp2EngineTests.
@Suite struct ProxyTunnelTests {
    static let apns = "api.push.apple.com"

    @Test func theJobsProxyWinsOverTheEnvironmentAndNoneMeansDirect() throws {
        let env = ["https_proxy": "http://env-proxy:8080", "no_proxy": "*"]
        let job = try ProxySettings.resolve(.http(url: "http://proxy.internal:3128", userEnv: "U", passwordEnv: "P"),
                                            environment: ["U": "herald", "P": "s3cret:x"])
        let t = try #require(try ProxyTunnel.resolve(job, apnsHost: Self.apns, environment: env))
        #expect(t.host == "proxy.internal" && t.port == "3128")
        #expect(t.authorization == "Basic " + Data("herald:s3cret:x".utf8).base64EncodedString())
        #expect("\(t)" == "http://proxy.internal:3128 (with credentials)")
        #expect(try ProxyTunnel.resolve(.direct, apnsHost: Self.apns, environment: env) == nil)
        #expect(try ProxyTunnel.resolve(.http("http://[::1]:3128"), apnsHost: Self.apns, environment: [:])?.host == "::1")
    }

    @Test func withoutTheKeyTheEnvironmentIsReadInLibcurlsOrder() throws {
        func tunnel(_ env: [String: String]) throws -> ProxyTunnel? { try ProxyTunnel.resolve(nil, apnsHost: Self.apns, environment: env) }
        #expect(try tunnel([:]) == nil)
        #expect(try tunnel(["https_proxy": ""]) == nil, "empty is unset")
        #expect(try tunnel(["http_proxy": "http://p:1"]) == nil, "http_proxy is for http:// URLs only")
        #expect(try tunnel(["https_proxy": "http://a:1", "HTTPS_PROXY": "http://b:2", "all_proxy": "http://c:3"])?.host == "a")
        #expect(try tunnel(["HTTPS_PROXY": "http://b:2", "all_proxy": "http://c:3"])?.host == "b")
        #expect(try tunnel(["all_proxy": "http://c:3", "ALL_PROXY": "http://d:4"])?.host == "c")
        #expect(try tunnel(["ALL_PROXY": "http://d:4"])?.host == "d")
        // libcurl's defaults: no scheme is HTTP, no port is 1080.
        let bare = try #require(try tunnel(["https_proxy": "squid.internal"]))
        #expect(bare.host == "squid.internal" && bare.port == "1080" && bare.authorization == nil)
        // Credentials in the URL are percent-decoded and sent as Basic.
        let withUser = try #require(try tunnel(["https_proxy": "http://us%40er:p%3Ass@squid:3128/"]))
        #expect(withUser.authorization == "Basic " + Data("us@er:p:ss".utf8).base64EncodedString())
        #expect(!"\(withUser)".contains("p%3Ass") && !"\(withUser)".contains("p:ss"))
    }

    @Test func noProxyExemptsTheHostItsDomainsOrEverything() throws {
        func direct(_ noProxy: String, key: String = "no_proxy") throws -> Bool {
            try ProxyTunnel.resolve(nil, apnsHost: Self.apns, environment: ["https_proxy": "http://p:1", key: noProxy]) == nil
        }
        #expect(try direct("*"))
        #expect(try direct("api.push.apple.com"))
        #expect(try direct("localhost, .apple.com"))
        #expect(try direct("apple.com", key: "NO_PROXY"))
        #expect(try !direct("push.apple.co"))
        #expect(try !direct("le.com"), "a suffix that is not a domain does not match")
        #expect(ProxyTunnel.exempts("::1", noProxy: "[::1]"))
    }

    @Test func socksFromTheJobOrTheEnvironmentCarriesItsCredentialsAsUsernameAndPassword() throws {
        let job = try ProxySettings.resolve(.socks(url: "socks5h://proxy.internal:1080", userEnv: "U", passwordEnv: "P"),
                                            environment: ["U": "herald", "P": "s3cret:x"])
        let t = try #require(try ProxyTunnel.resolve(job, apnsHost: Self.apns, environment: [:]))
        #expect(t == ProxyTunnel(kind: .socks5h, host: "proxy.internal", port: "1080", authorization: nil, user: "herald", password: "s3cret:x"))
        #expect("\(t)" == "socks5h://proxy.internal:1080 (with credentials)")
        // As libcurl reads all_proxy: the scheme picks who resolves, no port is 1080, user:password@ is percent-decoded.
        let env = try #require(try ProxyTunnel.resolve(nil, apnsHost: Self.apns, environment: ["all_proxy": "SOCKS5://us%40er:p%3Ass@[::1]"]))
        #expect(env == ProxyTunnel(kind: .socks5, host: "::1", port: "1080", authorization: nil, user: "us@er", password: "p:ss"))
        #expect("\(env)" == "socks5://[::1]:1080 (with credentials)")
        #expect(try ProxyTunnel.resolve(nil, apnsHost: Self.apns, environment: ["https_proxy": "socks5h://p:1", "no_proxy": ".apple.com"]) == nil)
    }

    @Test func aProxyTheEngineCannotTunnelThroughIsRefusedWithoutRepeatingTheURL() {
        for (value, expected) in [("https://user:pw@tls-proxy:443", "the environment's https_proxy: https:// proxies are not supported; use http://, socks5:// or socks5h://"),
                                  ("socks4a://user:pw@socks:1080", "the environment's https_proxy: socks4a:// proxies are not supported; use http://, socks5:// or socks5h://"),
                                  ("http://user:pw@squid:3128/path", "the environment's https_proxy is not a proxy URL of the form http://host:port"),
                                  ("socks5h://user:pw@socks:1080/x", "the environment's https_proxy is not a proxy URL of the form socks5h://host:port")] {
            #expect {
                try ProxyTunnel.resolve(nil, apnsHost: Self.apns, environment: ["https_proxy": value])
            } throws: { error in
                let text = "\(error)"
                return text.contains(expected) && text.contains("APNs connection: ") && !text.contains("pw")
            }
            // What `herald run` asks before reading anything: the same words, without the engine's prefix.
            #expect(throws: ProxyError.unusable(expected)) {
                try ProxyCheck.usable(nil, baseURL: "https://\(Self.apns)", environment: ["https_proxy": value])
            }
        }
        #expect(throws: Never.self) {
            try ProxyCheck.usable(nil, baseURL: "https://\(Self.apns)", environment: ["https_proxy": "https://tls-proxy:443", "no_proxy": "*"])
        }
    }
}
