import Foundation
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// docs/operations.md's ping table, row by row, on the built `herald run`: only a failure reaches
/// the monitor as `/<exit status>`; a run that is incomplete (4) or found the lock held (75)
/// is recorded with `/log`, which changes no check, and the run that found the lock held sends
/// no `/start` (it would restart the timer of the run holding the lock).
extension CronPingAndSystemdTests {
    /// Each run pings its own check path, so the paths of two runs at once can be told apart.
    func pings(_ monitor: HTTPReceiver, check: String) -> [HTTPReceiver.Request] {
        monitor.requests.filter { $0.path.hasPrefix("/\(check)/") || $0.path == "/\(check)" }
    }

    @Test func eachExitCodePingsWhatItMeansToTheMonitor() throws {
        let monitor = try HTTPReceiver()
        defer { monitor.stop() }

        // 0: finished.
        let ok = try job("table-ok", rows: tokens(1...3)) { $0.ops.pingURL = "\(monitor.url)/ok" }
        var r = try herald.run(ok)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(pings(monitor, check: "ok").map(\.path) == ["/ok/start", "/ok"])

        // 75: a second run of a campaign that another run is sending.
        let busy = try job("table-busy", rows: tokens(1...2_000)) { $0.apns.simulator.latencyMs = 50; $0.ops.pingURL = "\(monitor.url)/holder" }
        let holder = try herald.start(["run", busy.path, "--progress", "never"])
        let sent = RequestLog.wait(for: 20, in: dir.file("out/table-busy.ndjson")) { holder.process.isRunning }
        #expect(sent >= 20 && holder.process.isRunning, "the first run is sending")
        r = try herald.run(busy, ["--ping-url", "\(monitor.url)/overlap"])
        #expect(r.status == 75, "\(r.stdout)\(r.stderr)")
        let overlap = pings(monitor, check: "overlap")
        #expect(overlap.map(\.path) == ["/overlap/log"], "no /start, and the run is only recorded")
        #expect(overlap.first?.body.contains("another run holds the campaign's lock") == true, "\(overlap.first?.body ?? "")")

        // 4, stopped by SIGTERM: the holder started, and is recorded as incomplete.
        kill(holder.pid, SIGTERM)
        holder.process.waitUntilExit()
        #expect(holder.process.terminationStatus == 4)
        #expect(pings(monitor, check: "holder").map(\.path) == ["/holder/start", "/holder/log"])

        // 4, waiting for a window that opens in two hours (schedule.wait: false).
        let now = Date().timeIntervalSince1970
        let windowed = try job("table-window", rows: tokens(1...3)) {
            $0.ops.pingURL = "\(monitor.url)/window"
            $0.schedule = "{ local_time: { from: \"\(ScheduleRunTests.hhmm(now + 7_200))\", to: \"\(ScheduleRunTests.hhmm(now + 9_000))\" }, wait: false }"
        }
        r = try herald.run(windowed)
        #expect(r.status == 4, "\(r.stdout)\(r.stderr)")
        #expect(RequestLog.lineCount(dir.file("out/table-window.ndjson")) == 0, "nothing is due yet")
        let window = pings(monitor, check: "window")
        #expect(window.map(\.path) == ["/window/start", "/window/log"])
        #expect(window.last?.body.contains("schedule.wait: false") == true, "the log entry says why: \(window.last?.body ?? "")")

        // 2: an audience without the token column, found once the run holds the lock.
        let broken = try job("table-usage", rows: tokens(1...3)) { $0.ops.pingURL = "\(monitor.url)/usage" }
        try dir.write("data/table-usage.csv", "device\n\(tokens(1...1)[0])\n")
        r = try herald.run(broken)
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(pings(monitor, check: "usage").map(\.path) == ["/usage/start", "/usage/2"])
    }
}
