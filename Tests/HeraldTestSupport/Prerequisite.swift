import Foundation
import Testing

/// A tool or privilege a test needs from the machine (a Debian package, root). Outside CI a test
/// whose prerequisite is missing is skipped, saying why; under CI (`CI=true`, where `make test`
/// installs every package as root) it runs and fails naming what is missing, so a green CI never
/// hides a test that did not run.
public struct Prerequisite: Sendable {
    public let available: Bool
    /// What is missing, and how to get it: "prometheus-pushgateway (apt-get install -y prometheus-pushgateway)".
    public let what: String

    public init(_ available: Bool, _ what: String) { self.available = available; self.what = what }

    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// For `.enabled(if:)`: run when it is there, and always under CI.
    public var runs: Bool { available || Self.isCI }

    /// The skip's comment outside CI.
    public var skipReason: Comment { "needs \(what)" }

    /// At the start of the test: under CI without the prerequisite, a failure naming it (thrown,
    /// so the one line a test failure prints, and .ci/run's summary, carry the name).
    public func require() throws {
        guard available else { throw TestSupportError("CI=true and this test needs \(what)") }
    }
}
