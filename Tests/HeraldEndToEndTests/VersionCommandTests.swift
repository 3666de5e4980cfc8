import Foundation
import HeraldTestSupport
import Testing

/// `herald --version`: herald's version and the libraries it runs on, as loaded.
@Suite struct VersionCommandTests {
    @Test func printsHeraldsVersionAndEveryLibraryItRunsOn() throws {
        let r = try Herald()(["--version"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 5, "\(r.stdout)")
        #expect(lines[0].wholeMatch(of: /herald \d+\.\d+\.\d+/) != nil, "\(lines[0])")
        #expect(lines[1].wholeMatch(of: /libcurl \d+\.\d+\.\d+/) != nil, "\(lines[1])")
        #expect(lines[2].wholeMatch(of: /nghttp2 \d+\.\d+\.\d+/) != nil, "\(lines[2])")
        #expect(lines[3].hasPrefix("OpenSSL 3."), "\(lines[3])")
        #expect(lines[4].wholeMatch(of: /SQLite \d+\.\d+\.\d+/) != nil, "\(lines[4])")
        // The libcurl loaded is the one the development package describes (Debian installs one).
        let config = try ProcessRunner.run("/usr/bin/curl-config", ["--version"])
        #expect(config.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == lines[1], "curl-config: \(config.stdout)")
    }
}
