import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// `reports: { dir, compress }` and `audience.registered_at_field`, as the reports issue uses them;
/// `state: { file, network_filesystem }`, the same mapping form for the state file.
@Suite struct ReportsJobKeysTests {
    let dir = TemporaryDirectory("job-reports")

    /// A job with `keys` (a top-level line) added.
    func load(_ keys: String) throws -> JobSpec {
        try dir.write("a.csv", "token,registered_at\n" + String(repeating: "ab", count: 32) + ",2026-01-01\n")
        let path = try dir.write("jobs/job.yaml", """
            campaign: c
            audience: { files: [../a.csv], registered_at_field: registered_at }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template: { aps: { alert: "x" } } }
            \(keys)
            """)
        return try JobLoader.load(path: path)
    }

    @Test func compressIsReadAndOffByDefault() throws {
        let on = try load("reports: { dir: ../out, compress: true }")
        #expect(on.reports == ReportsSpec(dir: dir.file("out"), compress: true))
        #expect(on.audience.registeredAtField == "registered_at")
        #expect(try load("reports: { dir: ../out }").reports.compress == false)
        #expect(try load("reports: ../out").reports.compress == false)
        #expect(throws: JobError.self) { try load("reports: { dir: ../out, compress: maybe }") }
    }

    @Test func theStateMappingNamesTheFileAndTheNetworkFilesystemPolicy() throws {
        let exclusive = try load("state: { file: ../s/c.sqlite, network_filesystem: exclusive }")
        #expect(exclusive.statePath == dir.file("s/c.sqlite") && exclusive.stateNetworkFilesystem == .exclusive)
        let plain = try load("state: ../s/c.sqlite")
        #expect(plain.statePath == dir.file("s/c.sqlite") && plain.stateNetworkFilesystem == .refuse)
        let policyOnly = try load("state: { network_filesystem: refuse }")
        #expect(policyOnly.statePath == dir.file("state/c.sqlite") && policyOnly.stateNetworkFilesystem == .refuse)
    }

    @Test func aBadStatePolicyOrKeyNamesTheFileLineAndKey() throws {
        let bad = try #require(throws: JobError.self) { try load("state: { network_filesystem: shared }") }
        #expect("\(bad)".contains("job.yaml") && bad.line == 5 && "\(bad)".contains("state.network_filesystem"), "\(bad)")
        let unknown = try #require(throws: JobError.self) { try load("state: { path: ../s/c.sqlite }") }
        #expect("\(unknown)".contains("state.path"), "\(unknown)")
    }
}
