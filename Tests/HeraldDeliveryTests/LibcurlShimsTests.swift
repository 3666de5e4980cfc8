import HeraldDelivery
import Testing

/// The gate in front of CCurlNghttp2's shims: engaged only on a verified libcurl and nghttp2,
/// off when the job or the environment says so, and always with a reason an operator can read.
@Suite struct LibcurlShimsTests {
    static let all = Set(LibcurlShims.Shim.allCases)

    @Test func theVerifiedPairEngagesEveryShim() {
        let d = LibcurlShims.decide(libcurl: "7.88.1", nghttp2: "1.52.0", requested: true, environment: [:])
        #expect(d.engaged == Self.all && d.reason.isEmpty)
        #expect(d.summary == "libcurl shims engaged: closed_streams, coalesced_writes, request_headers, response_headers")
    }

    @Test func anotherLibcurlOrNghttp2TurnsEveryShimOffAndSaysWhy() {
        for (curl, h2) in [("8.5.0", "1.52.0"), ("7.87.0", "1.52.0"), ("7.88.1", "1.59.0"), ("7.8.1", "1.52.0")] {
            let d = LibcurlShims.decide(libcurl: curl, nghttp2: h2, requested: true, environment: [:])
            #expect(d.engaged.isEmpty, "\(curl) + \(h2)")
            #expect(d.summary.contains("libcurl \(curl) with nghttp2 \(h2) is not a verified pair") && d.summary.contains("plain libcurl"), "\(d.summary)")
        }
        let none = LibcurlShims.decide(libcurl: "7.88.1", nghttp2: nil, requested: true, environment: [:])
        #expect(none.engaged.isEmpty && none.reason == "libcurl 7.88.1 has no nghttp2")
    }

    @Test func theJobOrTheEnvironmentTurnsThemOffAndTheEnvironmentWins() {
        let job = LibcurlShims.decide(libcurl: "7.88.1", nghttp2: "1.52.0", requested: false, environment: [:])
        #expect(job.engaged.isEmpty && job.reason == "apns.libcurl_shims: off")
        let env = LibcurlShims.decide(libcurl: "7.88.1", nghttp2: "1.52.0", requested: true, environment: ["HERALD_LIBCURL_SHIMS": "off"])
        #expect(env.engaged.isEmpty && env.reason == "HERALD_LIBCURL_SHIMS=off")
        let both = LibcurlShims.decide(libcurl: "7.88.1", nghttp2: "1.52.0", requested: false, environment: ["HERALD_LIBCURL_SHIMS": "off"])
        #expect(both.reason == "HERALD_LIBCURL_SHIMS=off")
        let on = LibcurlShims.decide(libcurl: "7.88.1", nghttp2: "1.52.0", requested: true, environment: ["HERALD_LIBCURL_SHIMS": "on"])
        #expect(on.engaged == Self.all)
    }

    @Test func theProcessRunsWithWhatWasDecidedFirst() {
        let first = LibcurlShims.engage(environment: [:])
        #expect(LibcurlShims.engage(requested: !first.engaged.isEmpty, environment: ["HERALD_LIBCURL_SHIMS": "off"]) == first,
                "decided once per process, before the first connection")
        #expect(LibcurlShims.engaged == first.engaged, "the C side runs what was decided")
    }
}
