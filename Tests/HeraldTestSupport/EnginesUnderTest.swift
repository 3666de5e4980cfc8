import Foundation

/// The delivery engines (`apns.engine`) the engine-parameterized tests run on. `make test` runs the
/// delivery, simulator and end-to-end suites a second time with HERALD_LIBCURL_SHIMS=off, which
/// changes only the libcurl engine: that pass leaves the nghttp2 engine's cases out rather than
/// running them twice.
public enum EnginesUnderTest {
    public static var all: [String] {
        ProcessInfo.processInfo.environment["HERALD_LIBCURL_SHIMS"] == "off" ? ["libcurl"] : ["libcurl", "nghttp2"]
    }

    public static var includesNghttp2: Bool { all.contains("nghttp2") }
}
