import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// The audience section's keys beyond the walking skeleton: globs in `files`, `prescan`,
/// `max_invalid_rows`, `registered_at_field`.
@Suite struct AudienceKeysTests {
    let dir = TemporaryDirectory("job-audience")

    func job(files: String, extra: String = "") throws -> String {
        try dir.write("jobs/job.yaml", """
            campaign: c
            audience:
              files: \(files)
            \(extra.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            apns: { endpoint: simulator, topic: com.example.app }
            push:
              template: { aps: { alert: "hi" } }
            """)
    }

    func touch(_ names: String...) throws {
        for n in names { try dir.write(n, "token\n") }
    }

    @Test func defaults() throws {
        try touch("data/a.csv")
        let spec = try JobLoader.load(path: try job(files: "../data/a.csv"))
        #expect(spec.audience.prescan == true)
        #expect(spec.audience.maxInvalidRows == .default)
        #expect(spec.audience.maxInvalidRows.description == "5%")
        #expect(spec.audience.registeredAtField == nil)
    }

    @Test func newKeysAreParsed() throws {
        try touch("data/a.csv")
        var spec = try JobLoader.load(path: try job(files: "../data/a.csv", extra: """
            prescan: false
            max_invalid_rows: 250
            registered_at_field: user.registered_at
            id_field: id
            """))
        #expect(spec.audience.prescan == false)
        #expect(spec.audience.maxInvalidRows == .count(250))
        #expect(spec.audience.registeredAtField == "user.registered_at")
        #expect(spec.audience.idField == "id")
        spec = try JobLoader.load(path: try job(files: "../data/a.csv", extra: "max_invalid_rows: 0.5%"))
        #expect(spec.audience.maxInvalidRows == .percentage(thousandths: 500))
        spec = try JobLoader.load(path: try job(files: "../data/a.csv", extra: "max_invalid_rows: \"0\""))
        #expect(spec.audience.maxInvalidRows == .count(0))
    }

    @Test func badValuesSayWhatIsExpected() throws {
        try touch("data/a.csv")
        for (value, expected) in [
            ("max_invalid_rows: lots", "audience.max_invalid_rows must be a number of rows (1000) or a percentage of rows (5%), not \"lots\""),
            ("max_invalid_rows: 120%", "audience.max_invalid_rows must be a number of rows (1000) or a percentage of rows (5%), not \"120%\""),
            ("max_invalid_rows: -3", "audience.max_invalid_rows must be a number of rows (1000) or a percentage of rows (5%), not \"-3\""),
            ("prescan: maybe", "audience.prescan must be true or false"),
        ] {
            let error = try #require(throws: JobError.self) { try JobLoader.load(path: try job(files: "../data/a.csv", extra: value)) }
            #expect(error.message == expected)
            #expect(error.line == 4)
        }
    }

    @Test func globsExpandSortedWithNamesAsWritten() throws {
        try touch("data/part-10.csv.gz", "data/part-02.csv.gz", "data/part-1.csv.gz", "data/other.csv", "data/sub/part-3.csv.gz")
        try FileManager.default.createDirectory(atPath: dir.file("data/part-dir.csv.gz"), withIntermediateDirectories: true)
        let spec = try JobLoader.load(path: try job(files: "[../data/part-*.csv.gz, ../data/other.csv]"))
        #expect(spec.audience.files.map(\.name) == ["../data/part-02.csv.gz", "../data/part-1.csv.gz", "../data/part-10.csv.gz", "../data/other.csv"])
        #expect(spec.audience.files.map(\.path) == ["part-02.csv.gz", "part-1.csv.gz", "part-10.csv.gz", "other.csv"].map { dir.file("data/" + $0) })
        // Wildcards in directories, `?` and classes, and absolute patterns.
        let nested = try JobLoader.load(path: try job(files: "[\"../data/*/part-?.csv.gz\", \"\(dir.file("data"))/part-[01]*.csv.gz\"]"))
        #expect(nested.audience.files.map(\.name) == ["../data/sub/part-3.csv.gz", dir.file("data/part-02.csv.gz"), dir.file("data/part-1.csv.gz"), dir.file("data/part-10.csv.gz")])
    }

    @Test func globsResolveAgainstTheJobFileNotTheWorkingDirectory() throws {
        try touch("data/a1.csv", "data/a2.csv")
        let path = try job(files: "../data/a*.csv")
        let cwd = FileManager.default.currentDirectoryPath
        #expect(FileManager.default.changeCurrentDirectoryPath("/"))
        defer { _ = FileManager.default.changeCurrentDirectoryPath(cwd) }
        #expect(try JobLoader.load(path: path).audience.files.map(\.name) == ["../data/a1.csv", "../data/a2.csv"])
    }

    @Test func aFileNamedTwiceIsReadOnce() throws {
        try touch("data/a.csv", "data/b.csv")
        let spec = try JobLoader.load(path: try job(files: "[../data/b.csv, ../data/*.csv, ../data/./a.csv]"))
        #expect(spec.audience.files.map(\.name) == ["../data/b.csv", "../data/a.csv"])
    }

    @Test func aPatternMatchingNothingIsAnErrorNamingIt() throws {
        try touch("data/a.csv")
        try FileManager.default.createDirectory(atPath: dir.file("data/dir.csv"), withIntermediateDirectories: true)
        var error = try #require(throws: JobError.self) { try JobLoader.load(path: try job(files: "[../data/a.csv, ../data/part-*.csv.gz]")) }
        #expect(error.message == "audience.files pattern ../data/part-*.csv.gz matches no file (looked in \(dir.file("data")))")
        #expect(error.line == 3)
        error = try #require(throws: JobError.self) { try JobLoader.load(path: try job(files: "../data/dir*")) }
        #expect(error.message == "audience.files pattern ../data/dir* matches only directories, no file")
    }

    /// A file whose name has glob characters is read as named when it exists.
    @Test func anExistingFileIsNotAPattern() throws {
        try touch("data/export[1].csv", "data/export1.csv")
        let spec = try JobLoader.load(path: try job(files: "\"../data/export[1].csv\""))
        #expect(spec.audience.files.map(\.path) == [dir.file("data/export[1].csv")])
    }
}

@Suite struct InvalidRowLimitTests {
    @Test func parsesCountsAndPercentages() {
        #expect(InvalidRowLimit(text: "1000") == .count(1000))
        #expect(InvalidRowLimit(text: " 0 ") == .count(0))
        #expect(InvalidRowLimit(text: "5%") == .percentage(thousandths: 5_000))
        #expect(InvalidRowLimit(text: "0.125 %") == .percentage(thousandths: 125))
        #expect(InvalidRowLimit(text: "100%") == .percentage(thousandths: 100_000))
        for bad in ["", "%", "-1", "1e3", "5.5", "101%", "0.0001%", "five", "1.2.3%", "+5"] {
            #expect(InvalidRowLimit(text: bad) == nil, "\(bad)")
        }
    }

    @Test func allowedRoundsDownAndComparesStrictly() {
        let five = InvalidRowLimit.default
        #expect(five.allowed(rows: 3000) == 150)
        #expect(five.allowed(rows: 19) == 0)
        #expect(five.allowed(rows: 20) == 1)
        #expect(!five.isExceeded(invalid: 150, rows: 3000))
        #expect(five.isExceeded(invalid: 151, rows: 3000))
        #expect(!five.isExceeded(invalid: 0, rows: 0))
        // Exact where floating point is not: 0.29 % of 1,000,000 is 2,900.
        #expect(InvalidRowLimit(text: "0.29%")!.allowed(rows: 1_000_000) == 2_900)
        #expect(InvalidRowLimit.count(3).isExceeded(invalid: 4, rows: 10))
        #expect(!InvalidRowLimit.count(3).isExceeded(invalid: 3, rows: 1_000_000))
    }

    @Test func printsAsWritten() {
        #expect(InvalidRowLimit.count(42).description == "42")
        #expect(InvalidRowLimit(text: "0.5%")!.description == "0.5%")
        #expect(InvalidRowLimit(text: "0.125%")!.description == "0.125%")
        #expect(InvalidRowLimit.percent(5).description == "5%")
    }
}

@Suite struct InvalidRowLimitSoFarTests {
    @Test func aCountIsJudgedAtOnceAPercentageOnlyAfterASample() {
        #expect(InvalidRowLimit.count(2).isExceededSoFar(invalid: 3, rows: 3))
        #expect(!InvalidRowLimit.count(2).isExceededSoFar(invalid: 2, rows: 3))
        let fivePercent = InvalidRowLimit.percent(5)
        #expect(!fivePercent.isExceededSoFar(invalid: 1, rows: 10), "one bad row among the first ten says nothing yet")
        #expect(!fivePercent.isExceededSoFar(invalid: 500, rows: 9_999))
        #expect(fivePercent.isExceededSoFar(invalid: 501, rows: 10_000))
        #expect(!fivePercent.isExceededSoFar(invalid: 500, rows: 10_000))
    }
}
