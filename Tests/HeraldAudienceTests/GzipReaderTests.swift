import Testing
import HeraldAudience
import HeraldCore

@Suite struct GzipReaderTests {
    let csv = "token,name\n\(token("ab")),Ann\n\(token("cd")),Ben\n"

    @Test func readsGzipCSV() throws {
        let fx = try AudienceFixture()
        let file = try fx.write("a.csv.gz", try fx.gzip(csv))
        let reader = try AudienceFileReader(file: file, spec: AudienceSpec(files: [file]))
        #expect(reader.isCompressed)
        var names: [FieldValue?] = []
        while let e = try reader.next() { names.append(e.record?.fields["name"]) }
        #expect(names == [.string("Ann"), .string("Ben")])
        #expect(reader.compressedBytesRead == reader.fileSize)
    }

    @Test func detectsGzipByContentNotName() throws {
        let fx = try AudienceFixture()
        let disguised = try fx.write("really-gzip.csv", try fx.gzip(csv))
        let plainGz = try fx.write("really-plain.csv.gz", csv)
        let a = try AudienceFileReader(file: disguised, spec: AudienceSpec(files: []))
        let b = try AudienceFileReader(file: plainGz, spec: AudienceSpec(files: []))
        #expect(a.isCompressed)
        #expect(!b.isCompressed)
        #expect(try readAll(disguised).count == 2)
        #expect(try readAll(plainGz).count == 2)
    }

    @Test func readsEveryMemberOfAMultiMemberFile() throws {
        let fx = try AudienceFixture()
        let bytes = try fx.gzip(csv) + fx.gzip("\(token("ef")),Cy\n") + fx.gzip("") + fx.gzip("\(token("01")),Di\n")
        let events = try readAll(try fx.write("multi.csv.gz", bytes))
        #expect(events.compactMap { $0.record?.fields["name"] } == [.string("Ann"), .string("Ben"), .string("Cy"), .string("Di")])
        #expect(events.map(\.line) == [2, 3, 4, 5])
    }

    @Test func truncatedGzipNamesTheOffset() throws {
        let fx = try AudienceFixture()
        var text = "token,name\n"
        for i in 0..<5000 { text += "\(token("ab")),name \(i)\n" }
        let full = try fx.gzip(text)
        for cut in [full.count / 2, full.count - 4, full.count - 8, 5] {
            let file = try fx.write("t\(cut).csv.gz", Array(full[..<cut]))
            let error = readError(file)
            #expect(error == .truncatedGzip(file: "samples/t\(cut).csv.gz", offset: cut))
            #expect(error?.description == "samples/t\(cut).csv.gz: gzip stream truncated at byte \(cut)")
        }
    }

    @Test func corruptGzipNamesTheOffsetAndZlibsReason() throws {
        let fx = try AudienceFixture()
        var bad = try fx.gzip(csv)
        for i in 10..<16 { bad[i] = 0xFF }   // first deflate block header: BTYPE 11 is reserved
        let error = readError(try fx.write("c.csv.gz", bad))
        guard case .corruptGzip(let file, let offset, let detail) = error else {
            Issue.record("expected corruptGzip, got \(String(describing: error))")
            return
        }
        #expect(file == "samples/c.csv.gz")
        #expect((10...16).contains(offset))
        #expect(detail == "invalid block type")

        var badCRC = try fx.gzip(csv)
        badCRC[badCRC.count - 8] ^= 0xFF
        guard case .corruptGzip(_, _, let crcDetail) = readError(try fx.write("crc.csv.gz", badCRC)) else {
            Issue.record("a CRC mismatch must be an error")
            return
        }
        #expect(crcDetail == "incorrect data check")
    }

    @Test func trailingGarbageAfterTheLastMemberIsAnError() throws {
        let fx = try AudienceFixture()
        let bytes = try fx.gzip(csv) + Array("junk".utf8)
        guard case .corruptGzip = readError(try fx.write("g.csv.gz", bytes)) else {
            Issue.record("trailing bytes must not be ignored silently")
            return
        }
    }
}
