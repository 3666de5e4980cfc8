import Foundation
import HeraldCore
import Testing

/// What a server may echo of a secret, and what `SecretRedaction` leaves of it.
@Suite struct SecretRedactionTests {
    @Test func aHeaderValueIsCutWholeAndByItsCredentialInAnyCase() {
        let r = SecretRedaction(headerValues: ["Bearer SuperSecret123"])
        #expect(r.apply("got Bearer SuperSecret123") == "got [redacted]")
        #expect(r.apply("bad auth: SuperSecret123.") == "bad auth: [redacted].")
        #expect(r.apply("BAD AUTH: SUPERSECRET123, supersecret123") == "BAD AUTH: [redacted], [redacted]")
        #expect(r.apply("nothing secret here") == "nothing secret here")
    }

    @Test func basicAndParameterCredentialsAreCutDecodedToo() {
        let basic = "Basic " + Data("svc-user:hunter2-long".utf8).base64EncodedString()
        let r = SecretRedaction(headerValues: [basic, #"Digest username="x", response="6629fae49393a053""#])
        #expect(r.apply("who is svc-user:hunter2-long?") == "who is [redacted]?")
        #expect(r.apply("password HUNTER2-LONG refused") == "password [redacted] refused")
        #expect(r.apply("response 6629FAE49393A053") == "response [redacted]")
    }

    @Test func aURLsCredentialsPathAndQueryAreCut() {
        let r = SecretRedaction(urls: ["https://ops:pa%24%24word@push.example.com/ping/5f1c2a8e-0c1d-4b7e-9a51-3d2e6f7a8b9c?key=q-token-77&x=1"])
        #expect(r.apply("user ops:pa%24%24word bad") == "user [redacted] bad")
        #expect(r.apply("pa$$word is wrong") == "[redacted] is wrong")
        #expect(r.apply("no check 5F1C2A8E-0C1D-4B7E-9A51-3D2E6F7A8B9C") == "no check [redacted]")
        #expect(r.apply("bad key q-token-77") == "bad key [redacted]")
        #expect(r.apply("GET /ping failed for push.example.com") == "GET /ping failed for push.example.com", "short path segments and the host stay")
    }

    @Test func anExcerptIsShortOneLineAndCutAfterTheSecrets() {
        let r = SecretRedaction(headerValues: ["Bearer abcdefghij"])
        let body = Array(("line one\r\n\tabcdefghij" + String(repeating: "y", count: 500)).utf8)
        let e = r.excerpt(body, limit: 40)
        #expect(e.hasPrefix("line one [redacted]yyy") && e.hasSuffix("…") && e.count == 41, "\(e)")
        // A secret across the cut is still cut whole.
        #expect(r.excerpt(Array("0123456789 ABCDEFGHIJ".utf8), limit: 14) == "0123456789 [re…")
    }

    @Test func aURLLosesItsUserInfoOnly() {
        #expect(SecretRedaction.withoutCredentials("http://u:p@gw:9091/x") == "http://…@gw:9091/x")
        #expect(SecretRedaction.withoutCredentials("http://gw:9091/a@b") == "http://gw:9091/a@b")
        #expect(SecretRedaction.withoutCredentials("gw:9091") == "gw:9091")
    }
}
