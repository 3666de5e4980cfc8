import Foundation

/// The delivery engines (`apns.engine`) the engine-parameterized tests run on. `make test` runs the
/// delivery, simulator and end-to-end suites a second time with HERALD_LIBCURL_SHIMS=off and
/// HERALD_APNS_ENGINE=libcurl, so that every `herald run` of that pass goes through plain libcurl:
/// that pass leaves the nghttp2 engine's cases out rather than running them twice.
public enum EnginesUnderTest {
    public static var all: [String] {
        let env = ProcessInfo.processInfo.environment
        if let only = env["HERALD_APNS_ENGINE"], !only.isEmpty { return [only.lowercased()] }
        return env["HERALD_LIBCURL_SHIMS"] == "off" ? ["libcurl"] : ["libcurl", "nghttp2"]
    }

    public static var includesNghttp2: Bool { all.contains("nghttp2") }
}
