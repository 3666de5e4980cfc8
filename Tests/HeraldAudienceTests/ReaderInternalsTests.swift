import Foundation
import Testing
@testable import HeraldAudience
import HeraldCore
import HeraldTestSupport

/// Checks of the shortcuts the reader takes for speed against the definitions they stand in for.
@Suite struct ReaderInternalsTests {
    /// The canonical-token shortcut must agree with `DeviceToken.normalize` on every input it accepts.
    @Test func canonicalShortcutAgreesWithNormalize() {
        let samples = [
            token("ab"), token("0f"), token("AB"), String(token("ab").dropLast()), "", "ab",
            String(repeating: "a", count: 16), String(repeating: "a", count: 14), String(repeating: "0", count: 512),
            String(repeating: "0", count: 514), "<\(token("ab"))>", " \(token("ab"))", token("ag"), token("a/"), token("a:"),
            token("a`"), token("a@"), token("aG"), "ééééééééééééééééé",
        ]
        for raw in samples {
            let expected = try? DeviceToken.normalize(raw).get()
            if let shortcut = TokenCheck.alreadyCanonical(raw) {
                #expect(shortcut == expected, "shortcut accepted \(raw)")
            } else if let expected {
                #expect(expected.hex != raw, "shortcut refused canonical \(raw)")
            }
        }
    }

    @Test func utf8CheckMatchesTheStandardLibrary() {
        let cases: [[UInt8]] = [
            [], Array("plain ascii 1234567".utf8), Array("Zoë Łukasz 李雷 😀".utf8), [0xE9], [0xC0, 0x80], [0xED, 0xA0, 0x80],
            [0xF4, 0x90, 0x80, 0x80], [0xF0, 0x9F, 0x98], [0xE2, 0x82, 0xAC], [0x41, 0xF0, 0x9F, 0x98, 0x80, 0x42], [0xFF],
        ]
        for bytes in cases {
            let ours = bytes.withUnsafeBufferPointer { UTF8Text.string($0) }
            let stdlib = String(validating: bytes, as: UTF8.self)
            #expect(ours == stdlib, "\(bytes)")
        }
    }

    /// Dropping a reader halfway through a gzip file stops the read-ahead thread, which then
    /// frees the inflater and closes the file.
    @Test func droppedReaderReleasesItsFile() throws {
        let fx = try AudienceFixture()
        var text = "token,n\n"
        for i in 0..<200_000 { text += "\(token("ab")),\(i)\n" }
        let file = try fx.write("big.csv.gz", try fx.gzip(text))
        for _ in 0..<20 {
            let reader = try AudienceFileReader(file: file, spec: AudienceSpec(files: []))
            _ = try reader.next()
            #expect(try descriptors(of: file.path) >= 1)   // the check below can see an open file
        }
        #expect(try descriptorsAfterSettling(of: file.path) == 0)
    }

    /// A header error in a gzip file must not leave the read-ahead thread holding the file.
    @Test func failedOpenReleasesItsFile() throws {
        let fx = try AudienceFixture()
        var text = "id,name\n"
        for i in 0..<200_000 { text += "\(i),n\n" }
        let file = try fx.write("nohdr.csv.gz", try fx.gzip(text))
        #expect(readError(file) == .missingTokenColumn(file: "samples/nohdr.csv.gz", line: 1, column: "token", columns: ["id", "name"]))
        #expect(try descriptorsAfterSettling(of: file.path) == 0)
    }

    @Test func overlongRecordIsAFileError() throws {
        let fx = try AudienceFixture()
        var bytes = Array("token,note\n\(token("ab")),\"".utf8)
        bytes += [UInt8](repeating: UInt8(ascii: "x"), count: ByteWindow.maximumCapacity + 10)
        #expect(readError(try fx.write("long.csv", bytes)) ==
                .recordTooLong(file: "samples/long.csv", line: 2, limit: ByteWindow.maximumCapacity))
    }

    @Test func deepNestingIsMalformedNotACrash() throws {
        let fx = try AudienceFixture()
        let deep = String(repeating: "{\"a\":", count: 10_000) + "1" + String(repeating: "}", count: 10_000)
        let events = try readAll(try fx.write("deep.ndjson", deep + "\n"))
        #expect(events.first?.invalid?.reason == .malformedJSON)
        #expect(events.first?.invalid?.detail.hasPrefix("nesting deeper than 64 levels") == true)
    }

    /// How many of this process's file descriptors point at `path` (other tests run in
    /// parallel, so a plain count would be flaky).
    /// The read-ahead thread lets go of its file a moment after the reader does; wait up to 2 s.
    func descriptorsAfterSettling(of path: String) throws -> Int {
        var open = 0
        try waitUntil(timeout: 2) {
            open = try descriptors(of: path)
            return open == 0
        }
        return open
    }

    private func descriptors(of path: String) throws -> Int {
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        return try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").filter { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) == target
        }.count
    }
}
