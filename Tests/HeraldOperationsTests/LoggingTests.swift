import Foundation
@testable import HeraldOperations
import Logging
import Testing

/// Log lines: tokens shortened unless --log-sensitive, secrets never shown, one JSON object per line.
@Suite struct LoggingTests {
    static let token = "52738d89a0b1c2d3e4f5061728394a5b6c7d8e9f00112233445566778899aabb"
    static let jwt = "eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWSJ9.eyJpc3MiOiJURUFNIiwiaWF0IjoxNzAwMDAwMDAwfQ.MEUCIQDx-_abc"

    @Test func tokensAreCutToEightHexDigitsUnlessSensitive() {
        let r = LogRedaction()
        #expect(r.apply("POST /3/device/\(Self.token) failed") == "POST /3/device/52738d89… failed")
        #expect(r.apply("token=\(Self.token.uppercased())") == "token=52738D89…")
        // UUIDs (apns-id, run id) and short numbers stay whole.
        let uuid = "240479b6-ef40-5ad4-bb63-796f266793cd"
        #expect(r.apply("apns-id \(uuid), 1234567890123 ms") == "apns-id \(uuid), 1234567890123 ms")
        #expect(LogRedaction(showTokens: true).apply("token=\(Self.token)") == "token=\(Self.token)")
    }

    @Test func jwtsAndKeysAreNeverShownEvenWhenSensitive() {
        for r in [LogRedaction(), LogRedaction(showTokens: true)] {
            #expect(r.apply("authorization: bearer \(Self.jwt) sent") == "authorization: bearer [jwt redacted] sent")
            let pem = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----"
            #expect(r.apply("bad key: \(pem) (file)") == "bad key: [pem redacted] (file)")
            #expect(r.apply("truncated: -----BEGIN PRIVATE KEY-----\nMIGHAgEA") == "truncated: [pem redacted]")
        }
    }

    @Test func jsonLinesAreOneObjectWithMetadataAsFields() throws {
        let h = HeraldLogHandler(label: "herald", format: .json, redaction: LogRedaction())
        let line = h.render(level: .warning, message: "token \(Self.token) said \"no\"\nnext",
                            metadata: ["campaign": "spring", "shard": "1/4", "token": .string(Self.token)], at: Date(timeIntervalSince1970: 1_700_000_000.25))
        #expect(!line.contains("\n"))
        let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(o["time"] == "2023-11-14T22:13:20.250Z")
        #expect(o["level"] == "warning" && o["label"] == "herald")
        #expect(o["message"] == "token 52738d89… said \"no\"\nnext")
        #expect(o["campaign"] == "spring" && o["shard"] == "1/4" && o["token"] == "52738d89…")
    }

    @Test func textLinesPutMetadataAfterTheMessage() {
        let h = HeraldLogHandler(label: "herald", format: .text, redaction: LogRedaction(showTokens: true))
        let line = h.render(level: .notice, message: "starting", metadata: ["campaign": "spring", "shard": "0/2"],
                            at: Date(timeIntervalSince1970: 0))
        #expect(line == "1970-01-01T00:00:00.000Z notice  starting  campaign=spring shard=0/2")
    }
}
