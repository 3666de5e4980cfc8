import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// `state: <file>` or `state: { file, network_filesystem }`.
@Suite struct StateJobKeysTests {
    let dir = TemporaryDirectory("job-state")

    func load(_ state: String) throws -> JobSpec {
        try dir.write("a.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        let path = try dir.write("jobs/job.yaml", """
            campaign: c
            audience: { files: [../a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template: { aps: { alert: "x" } } }
            \(state)
            """)
        return try JobLoader.load(path: path)
    }

    @Test func theMappingFormNamesTheFileAndTheNetworkFilesystemPolicy() throws {
        let exclusive = try load("state: { file: ../s/c.sqlite, network_filesystem: exclusive }")
        #expect(exclusive.statePath == dir.file("s/c.sqlite") && exclusive.stateNetworkFilesystem == .exclusive)
        let plain = try load("state: ../s/c.sqlite")
        #expect(plain.statePath == dir.file("s/c.sqlite") && plain.stateNetworkFilesystem == .refuse)
        let policyOnly = try load("state: { network_filesystem: refuse }")
        #expect(policyOnly.statePath == dir.file("state/c.sqlite") && policyOnly.stateNetworkFilesystem == .refuse)
    }

    @Test func aBadPolicyOrKeyNamesTheFileLineAndKey() throws {
        let bad = try #require(throws: JobError.self) { try load("state: { network_filesystem: shared }") }
        #expect("\(bad)".contains("job.yaml") && bad.line == 5 && "\(bad)".contains("state.network_filesystem"), "\(bad)")
        let unknown = try #require(throws: JobError.self) { try load("state: { path: ../s/c.sqlite }") }
        #expect("\(unknown)".contains("state.path"), "\(unknown)")
    }
}
