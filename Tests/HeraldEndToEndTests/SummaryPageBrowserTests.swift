import Foundation
import HeraldTestSupport
import Testing

/// summary.html in a real browser: headless Chromium (Debian package `chromium`) loads the page a
/// campaign wrote, and the rendered DOM and a screenshot are checked. Skipped, saying so, only where
/// Chromium is not installed (CI installs it: `apt-get install -y chromium`).
@Suite(.serialized) struct SummaryPageBrowserTests {
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    let dir = TemporaryDirectory("e2e-html")

    func browser(_ args: [String]) throws -> ProcessRunner.Result {
        // A private profile and HOME: headless Chromium writes its profile there.
        try ProcessRunner.run("/usr/bin/env", ["HOME=\(dir.path)", Self.chromium!, "--headless", "--disable-gpu", "--no-sandbox",
                                               "--user-data-dir=\(dir.file("profile"))"] + args)
    }

    static let browserInstalled = Prerequisite(chromium != nil, "Chromium (apt-get install -y chromium) to check summary.html in a browser")

    @Test(.enabled(if: browserInstalled.runs, browserInstalled.skipReason))
    func summaryPageRendersTitleTotalsAndChartsInChromium() throws {
        try Self.browserInstalled.require()
        let job = try TestJob("html", rows: ["id,token"] + (1...30).map { "u\($0),\(String(format: "%064x", $0))" }
                                             + (1...3).map { "d\($0),dead\(String(format: "%060x", $0))" }) {
            $0.campaign = "html-check"
            $0.audience.idField = "id"
            $0.apns.simulator.unregisteredPrefixes = ["dead"]
            $0.push.template = #"{ aps: { alert: "Hi" } }"#
        }.write(in: dir)
        let r = try Herald().run(job)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let page = "file://" + dir.file("reports/html-check/summary.html")

        let dom = try browser(["--dump-dom", page])
        #expect(dom.status == 0, "\(dom.stderr)")
        #expect(dom.stdout.contains("<title>herald report: html-check</title>"), "\(dom.stdout.prefix(400))")
        #expect(dom.stdout.contains("id=\"total-sent\" data-value=\"30\">30<"))
        #expect(dom.stdout.contains("id=\"total-failed\" data-value=\"3\">3<"))
        #expect(dom.stdout.contains("id=\"total-recipients\" data-value=\"33\">33<"))
        #expect(dom.stdout.contains("<svg id=\"outcome-chart\"") && dom.stdout.contains("<svg id=\"rate-chart\""))
        #expect(dom.stdout.contains("Unregistered"))

        let shot = dir.file("shot.png")
        let png = try browser(["--screenshot=\(shot)", "--window-size=1000,1600", page])
        #expect(png.status == 0, "\(png.stderr)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: shot))
        #expect(bytes.count > 10_000 && bytes.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]), "a PNG of the rendered page")
    }
}
