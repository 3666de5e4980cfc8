import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// `reports: { dir, compress }` and `audience.registered_at_field`, as the reports issue uses them.
@Suite struct ReportsJobKeysTests {
    let dir = TemporaryDirectory("job-reports")

    func load(_ reports: String) throws -> JobSpec {
        try dir.write("a.csv", "token,registered_at\n" + String(repeating: "ab", count: 32) + ",2026-01-01\n")
        let path = try dir.write("jobs/job.yaml", """
            campaign: c
            audience: { files: [../a.csv], registered_at_field: registered_at }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template: { aps: { alert: "x" } } }
            \(reports)
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
}
