import Testing
import HeraldAudience
import HeraldCore

@Suite struct AudienceFileErrorTests {
    @Test func missingFile() throws {
        let fx = try AudienceFixture()
        let file = AudienceFile(name: "samples/x.csv.gz", path: fx.directory.appendingPathComponent("nope.csv.gz").path)
        #expect(readError(file) == .notFound(file: "samples/x.csv.gz"))
        #expect(readError(file)?.description == "audience file not found: samples/x.csv.gz")
    }

    @Test func headerWithoutTokenColumn() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("x.csv", "id, first_name\n1,Ann\n")
        let error = readError(file)
        #expect(error == .missingTokenColumn(file: "samples/x.csv", line: 1, column: "token", columns: ["id", "first_name"]))
        #expect(error?.description == "samples/x.csv line 1: header has no column \"token\" (columns: id, first_name)")
    }

    @Test func emptyFilesHaveNoHeader() throws {
        let fx = try AudienceFixture()
        #expect(readError(try fx.write("x.csv", "")) == .emptyFile(file: "samples/x.csv"))
        #expect(readError(try fx.write("y.csv", "\n\r\n\n")) == .emptyFile(file: "samples/y.csv"))
        #expect(readError(try fx.write("z.csv.gz", try fx.gzip(""))) == .emptyFile(file: "samples/z.csv.gz"))
        #expect(AudienceError.emptyFile(file: "samples/x.csv").description == "samples/x.csv: empty file (no header)")
    }

    @Test func duplicateHeaderColumn() throws {
        let fx = try AudienceFixture()
        #expect(readError(try fx.write("d.csv", "token,name,name\n")) ==
                .badHeader(file: "samples/d.csv", line: 1, detail: "header has column \"name\" twice"))
    }

    @Test func unterminatedQuoteStopsTheRun() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("q.csv", "token,name\n\(token("ab")),ok\n\(token("cd")),\"never closed\n\(token("ef")),lost\n")
        #expect(readError(file) == .unterminatedQuote(file: "samples/q.csv", line: 3))
    }

    @Test func directoryIsNotAnAudience() throws {
        let fx = try AudienceFixture()
        let file = AudienceFile(name: "samples", path: fx.directory.path)
        #expect(readError(file) == .cannotOpen(file: "samples", reason: "is a directory"))
    }
}
