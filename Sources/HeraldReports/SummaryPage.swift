import Foundation
import HeraldCore
import HeraldState

/// summary.html: one self-contained page (inline CSS and SVG, no scripts, no external assets) for
/// someone who never opened a terminal: did it work, how many people got it, why the others did
/// not, how fast it went. Element ids (`total-sent`, …) are stable, for tests and scrapers.
public enum SummaryPage {
    static let statusColors: [RecipientStatus: String] = [
        .sent: "#2e7d32", .failed: "#c62828", .suppressed: "#6d4c41", .throttled: "#ef6c00", .pending: "#1565c0", .cancelled: "#616161",
        .heldOut: "#8e24aa", .awaitingWinner: "#90a4ae",
    ]
    static let statusWords: [RecipientStatus: String] = [
        .sent: "Sent: accepted by Apple for delivery",
        .failed: "Failed: Apple refused them (see why below)",
        .suppressed: "Not sent on purpose (known dead tokens, or removed from the list)",
        .throttled: "Held back by the sending limits",
        .pending: "Not finished yet (run the campaign again to finish)",
        .cancelled: "Not sent: an operator cancelled the campaign (herald cancel)",
        .heldOut: "Held out of the experiment on purpose: the group the campaign's lift is measured against",
        .awaitingWinner: "Waiting for the experiment's winner to be chosen (experiment.winner, or herald run --winner)",
    ]

    public static func html(_ s: Summary) -> String {
        var h = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>herald report: \(esc(s.campaign))</title>
            <style>
            body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#222}
            h1{font-size:1.6rem;margin-bottom:.2rem} h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.3rem}
            .verdict{font-size:1.1rem;padding:.8rem 1rem;border-radius:.4rem;background:#f1f8e9}
            .verdict.open{background:#fff3e0}
            .tiles{display:flex;flex-wrap:wrap;gap:.8rem;margin:1rem 0}
            .tile{flex:1 1 8rem;border:1px solid #ddd;border-radius:.4rem;padding:.6rem .8rem}
            .tile .n{font-size:1.6rem;font-weight:600;display:block}
            table{border-collapse:collapse;width:100%} td,th{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #eee}
            td.num,th.num{text-align:right;font-variant-numeric:tabular-nums} .muted{color:#666;font-size:.9rem}
            </style></head><body>
            <h1>Campaign <span id="campaign">\(esc(s.campaign))</span></h1>
            <p class="muted">Run \(esc(s.runId)) · started \(esc(s.startedAt))\(s.finishedAt.map { " · finished " + esc($0) } ?? "")</p>

            """
        let open = s.count(.pending)
        if let c = s.control {
            let why = c.reason.isEmpty ? "" : ": " + esc(c.reason)
            let what = c.action == .cancelled
                ? "Cancelled by \(esc(c.by)) at \(esc(c.at))\(why). \(num(s.count(.cancelled))) recipients were not sent the notification, and no later run sends it."
                : "Paused by \(esc(c.by)) at \(esc(c.at))\(why). Nothing more is sent until the campaign is resumed (herald resume)."
            h += "<p class=\"verdict open\" id=\"control\">\(what)</p>\n"
        }
        let waiting = s.count(.awaitingWinner)
        if s.finishedAt == nil && open == 0 && waiting > 0 {
            h += "<p class=\"verdict open\" id=\"verdict\">Experiment test finished: \(num(waiting)) recipients wait for the winner. Choose it (experiment.winner in the job, or herald run --winner) and run the campaign again to send it to them.</p>\n"
        } else if s.finishedAt != nil {
            h += "<p class=\"verdict\" id=\"verdict\">Finished: \(num(s.count(.sent))) of \(num(s.distinct)) recipients were sent the notification.</p>\n"
        } else {
            h += "<p class=\"verdict open\" id=\"verdict\">Not finished: \(num(open)) recipients are still waiting. Running the same campaign again continues where it stopped; nobody gets it twice.</p>\n"
        }
        h += "<div class=\"tiles\">\n"
        h += tile("total-recipients", "Recipients", s.distinct)
        for status in shownStatuses(s) { h += tile("total-\(status.rawValue)", status.rawValue.capitalized, s.count(status)) }
        h += "</div>\n"

        h += "<h2>Outcome</h2>\n" + outcomeChart(s)
        h += experimentSection(s)
        h += appsSection(s)
        h += "<h2>Send rate over time</h2>\n" + rateChart(s)
        h += reasonsTable(s)
        h += zoneSection(s)
        h += audienceSection(s)
        h += speedSection(s)
        h += "<h2>Files</h2>\n<ul>\n"
        for (name, what) in [("deliveries.csv", "every recipient and what happened"),
                             ("unregistered.csv", "dead tokens to delete from your database"),
                             ("rejected-tokens.csv", "tokens refused for this app or environment: check the setup before deleting"),
                             ("invalid.csv", "rows of the audience file that could not be used"),
                             ] + (s.experiment == nil ? [] : [("holdout.csv", "the experiment's held-out recipients, to measure lift against")]) + [
                             ("summary.json", "these figures, for programs")] {
            h += "<li><code>\(name)</code>: \(what)</li>\n"
        }
        h += "</ul>\n<p class=\"muted\">Written by herald from the campaign's state file.</p>\n</body></html>\n"
        return h
    }

    /// An experiment: one row and one bar per arm (each variant's test group, the holdout, the
    /// winner's rollout, those waiting for it), with its recipients and what happened to them.
    static func experimentSection(_ s: Summary) -> String {
        guard let arms = s.experiment, !arms.isEmpty else { return "" }
        let shown: [RecipientStatus] = RecipientStatus.allCases.filter { st in arms.contains { ($0.counts[st] ?? 0) > 0 } }
        var h = "<h2>Experiment</h2>\n<table id=\"experiment\"><tr><th>Group</th><th class=\"num\">Recipients</th>"
        for st in shown { h += "<th class=\"num\">\(esc(st.rawValue))</th>" }
        h += "<th class=\"num\">Sent of recipients</th></tr>\n"
        for arm in arms {
            let id = "variant-" + (arm.variant ?? "waiting") + (arm.rollout && arm.variant != nil ? "-rollout" : "")
            h += "<tr id=\"\(esc(id))\"><td>\(esc(arm.label))</td><td class=\"num\" data-value=\"\(arm.total)\">\(num(arm.total))</td>"
            for st in shown { h += "<td class=\"num\">\(num(arm.counts[st] ?? 0))</td>" }
            let sent = arm.counts[.sent] ?? 0
            h += "<td class=\"num\">\(arm.total > 0 ? String(format: "%.1f%%", 100 * Double(sent) / Double(arm.total)) : "")</td></tr>\n"
        }
        h += "</table>\n"
        let rowHeight = 30, width = 640, labelWidth = 200, barMax = 320
        let total = max(1, arms.reduce(0) { $0 + $1.total })
        h += "<svg id=\"experiment-chart\" role=\"img\" aria-label=\"Recipients of each experiment group\" width=\"\(width)\" height=\"\(rowHeight * arms.count + 10)\" viewBox=\"0 0 \(width) \(rowHeight * arms.count + 10)\" xmlns=\"http://www.w3.org/2000/svg\">\n"
        for (i, arm) in arms.enumerated() {
            let y = i * rowHeight + 5
            let w = arm.total == 0 ? 0 : max(2, Int(Double(barMax) * Double(arm.total) / Double(total)))
            let sentW = arm.total == 0 ? 0 : Int(Double(w) * Double(arm.counts[.sent] ?? 0) / Double(arm.total))
            h += "<text x=\"0\" y=\"\(y + 18)\" font-size=\"13\">\(esc(arm.label))</text>"
            h += "<rect x=\"\(labelWidth)\" y=\"\(y + 4)\" width=\"\(w)\" height=\"20\" fill=\"#cfd8dc\"/>"
            h += "<rect x=\"\(labelWidth)\" y=\"\(y + 4)\" width=\"\(sentW)\" height=\"20\" fill=\"\(statusColors[.sent]!)\"><title>sent</title></rect>"
            h += "<text x=\"\(labelWidth + w + 8)\" y=\"\(y + 18)\" font-size=\"13\">\(num(arm.total)) (\(String(format: "%.1f%%", 100 * Double(arm.total) / Double(total))))</text>\n"
        }
        h += "</svg>\n<p class=\"muted\">Green: sent. APNs does not say who opened a notification: join deliveries.csv's variant column (and holdout.csv) with your own analytics to compare the groups.</p>\n"
        return h
    }

    /// Many apps: a table per app, one row per environment, with its recipients and what
    /// happened to them (`apps` in summary.json).
    static func appsSection(_ s: Summary) -> String {
        guard let apps = s.apps, !apps.isEmpty else { return "" }
        let shown: [RecipientStatus] = RecipientStatus.allCases.filter { st in apps.contains { ($0.counts[st] ?? 0) > 0 } }
        var h = "<h2>Apps</h2>\n"
        var names: [String] = []
        for a in apps where !names.contains(a.app) { names.append(a.app) }
        for name in names {
            let rows = apps.filter { $0.app == name }
            h += "<h3>\(esc(name.isEmpty ? "The job's app" : name))</h3>\n<table id=\"app-\(esc(name))\"><tr><th>Environment</th><th class=\"num\">Recipients</th>"
            for st in shown { h += "<th class=\"num\">\(esc(st.rawValue))</th>" }
            h += "<th class=\"num\">Sent of recipients</th></tr>\n"
            for a in rows {
                h += "<tr id=\"app-\(esc(name))-\(esc(a.environment))\"><td>\(esc(a.environment))</td><td class=\"num\" data-value=\"\(a.total)\">\(num(a.total))</td>"
                for st in shown { h += "<td class=\"num\">\(num(a.counts[st] ?? 0))</td>" }
                let sent = a.counts[.sent] ?? 0
                h += "<td class=\"num\">\(a.total > 0 ? String(format: "%.1f%%", 100 * Double(sent) / Double(a.total)) : "")</td></tr>\n"
            }
            h += "</table>\n"
        }
        return h
    }

    /// Every status, but an experiment's only in a campaign that has one.
    static func shownStatuses(_ s: Summary) -> [RecipientStatus] {
        RecipientStatus.allCases.filter { s.experiment != nil || !$0.isExperimentOnly || s.count($0) > 0 }
    }

    static func tile(_ id: String, _ label: String, _ n: Int) -> String {
        "<div class=\"tile\"><span class=\"n\" id=\"\(id)\" data-value=\"\(n)\">\(num(n))</span>\(esc(label))</div>\n"
    }

    /// One horizontal bar per status, length proportional to its share of the recipients.
    static func outcomeChart(_ s: Summary) -> String {
        let total = max(1, s.distinct)
        let rowHeight = 34, width = 640, labelWidth = 110, barMax = 380
        let statuses = shownStatuses(s)
        var svg = "<svg id=\"outcome-chart\" role=\"img\" aria-label=\"Outcome of each recipient\" width=\"\(width)\" height=\"\(rowHeight * statuses.count + 10)\" viewBox=\"0 0 \(width) \(rowHeight * statuses.count + 10)\" xmlns=\"http://www.w3.org/2000/svg\">\n"
        for (i, status) in statuses.enumerated() {
            let n = s.count(status)
            let y = i * rowHeight + 5
            let w = n == 0 ? 0 : max(2, Int(Double(barMax) * Double(n) / Double(total)))
            let pct = String(format: "%.1f%%", 100 * Double(n) / Double(total))
            svg += "<text x=\"0\" y=\"\(y + 20)\" font-size=\"14\">\(status.rawValue)</text>"
            svg += "<rect x=\"\(labelWidth)\" y=\"\(y + 4)\" width=\"\(w)\" height=\"22\" fill=\"\(statusColors[status]!)\"><title>\(esc(statusWords[status]!))</title></rect>"
            svg += "<text x=\"\(labelWidth + w + 8)\" y=\"\(y + 20)\" font-size=\"14\">\(num(n)) (\(pct))</text>\n"
        }
        svg += "</svg>\n<ul class=\"muted\">\n"
        for status in RecipientStatus.allCases where s.count(status) > 0 { svg += "<li>\(esc(statusWords[status]!))</li>\n" }
        return svg + "</ul>\n"
    }

    /// Notifications sent per second, as bars over the run's time (UTC); with a `schedule`, a line
    /// where the recipients' local windows opened.
    static func rateChart(_ s: Summary) -> String {
        let openings = s.delivery?.windowOpenings ?? [:]
        guard let rate = s.delivery?.sendRate(maxBars: 60, including: openings.keys) else {
            return "<p id=\"rate-chart\" class=\"muted\">Nothing was sent yet.</p>\n"
        }
        let width = 640, height = 220, left = 60, bottom = 30, plotW = 560, plotH = 170
        let perSecond = rate.counts.map { Double($0) / Double(rate.seconds) }
        let peak = max(1, perSecond.max() ?? 1)
        let barW = max(1, plotW / max(1, rate.counts.count))
        var svg = "<svg id=\"rate-chart\" role=\"img\" aria-label=\"Notifications sent per second over time\" width=\"\(width)\" height=\"\(height)\" viewBox=\"0 0 \(width) \(height)\" xmlns=\"http://www.w3.org/2000/svg\">\n"
        svg += "<line x1=\"\(left)\" y1=\"\(height - bottom)\" x2=\"\(left + plotW)\" y2=\"\(height - bottom)\" stroke=\"#999\"/>"
        svg += "<line x1=\"\(left)\" y1=\"\(height - bottom - plotH)\" x2=\"\(left)\" y2=\"\(height - bottom)\" stroke=\"#999\"/>\n"
        svg += "<text x=\"\(left - 6)\" y=\"\(height - bottom - plotH + 5)\" font-size=\"12\" text-anchor=\"end\">\(num(Int(peak.rounded())))/s</text>"
        svg += "<text x=\"\(left - 6)\" y=\"\(height - bottom)\" font-size=\"12\" text-anchor=\"end\">0</text>\n"
        for (i, v) in perSecond.enumerated() where v > 0 {
            let h = max(1, Int(Double(plotH) * v / peak))
            let start = RegistrationTime.iso8601(milliseconds: (rate.start + Int64(i) * rate.seconds) * 1000)
            svg += "<rect x=\"\(left + i * barW)\" y=\"\(height - bottom - h)\" width=\"\(max(1, barW - 1))\" height=\"\(h)\" fill=\"#1565c0\"><title>\(clock(start)): \(num(Int(v.rounded()))) per second</title></rect>\n"
        }
        // The openings within one bar share a line: at most one per bar.
        var lines: [Int: (at: Int64, recipients: Int)] = [:]
        for (at, n) in openings {
            let bar = Int((at - rate.start) / rate.seconds)
            lines[bar] = (min(lines[bar]?.at ?? at, at), (lines[bar]?.recipients ?? 0) + n)
        }
        for (bar, line) in lines.sorted(by: { $0.key < $1.key }) {
            let x = left + bar * barW + Int(Double(barW) * Double((line.at - rate.start) % rate.seconds) / Double(rate.seconds))
            let when = clock(RegistrationTime.iso8601(milliseconds: line.at * 1000))
            svg += "<line class=\"window\" x1=\"\(x)\" y1=\"\(height - bottom - plotH)\" x2=\"\(x)\" y2=\"\(height - bottom)\" stroke=\"#ef6c00\" stroke-dasharray=\"4 3\" stroke-width=\"2\"><title>\(when) UTC: the local window of \(num(line.recipients)) recipient(s) opened</title></line>\n"
        }
        let first = RegistrationTime.iso8601(milliseconds: rate.start * 1000)
        let last = RegistrationTime.iso8601(milliseconds: (rate.start + Int64(rate.counts.count) * rate.seconds) * 1000)
        svg += "<text x=\"\(left)\" y=\"\(height - 8)\" font-size=\"12\">\(clock(first)) UTC</text>"
        svg += "<text x=\"\(left + plotW)\" y=\"\(height - 8)\" font-size=\"12\" text-anchor=\"end\">\(clock(last)) UTC</text>\n</svg>\n"
        let each = rate.seconds == 1 ? "each bar is one second" : "each bar is \(rate.seconds) seconds"
        let windows = openings.isEmpty ? "" : " Dashed orange lines: a local window opened (schedule); hover one for how many recipients it opened for."
        return svg + "<p class=\"muted\">Notifications accepted by Apple per second (\(each)). Gaps are pauses, for example between a stop and the rerun that finished the campaign, or the wait for a window.\(windows)</p>\n"
    }

    static func reasonsTable(_ s: Summary) -> String {
        guard !s.byReason.isEmpty else { return "<h2>Why some were not sent</h2>\n<p id=\"reasons\">Every recipient was sent.</p>\n" }
        var t = "<h2>Why some were not sent</h2>\n<table id=\"reasons\"><tr><th>Reason</th><th class=\"num\">Recipients</th><th>What it means</th><th>What herald did</th></tr>\n"
        for (reason, n) in s.byReason.sorted(by: { $0.value == $1.value ? $0.key < $1.key : $0.value > $1.value }) {
            t += "<tr><td>\(esc(reason))</td><td class=\"num\">\(num(n))</td><td>\(esc(meaning(reason)))</td><td>\(esc(did(Summary.action(for: reason))))</td></tr>\n"
        }
        return t + "</table>\n"
    }

    static func audienceSection(_ s: Summary) -> String {
        var t = "<h2>Audience</h2>\n<table id=\"audience\">\n"
        t += "<tr><td>Rows read</td><td class=\"num\">\(num(s.rows))</td></tr>\n"
        let unit = s.broadcastChannels == nil ? "device" : "channel"
        t += "<tr><td>Different \(unit)s (recipients)</td><td class=\"num\">\(num(s.distinct))</td></tr>\n"
        t += "<tr><td>Repeated rows (same \(unit) again: sent once)</td><td class=\"num\">\(num(s.duplicates))</td></tr>\n"
        t += "<tr><td>Unusable rows (listed in invalid.csv)</td><td class=\"num\" id=\"total-invalid\">\(num(s.invalid))</td></tr>\n"
        for (reason, n) in s.invalidByReason.sorted(by: { $0.key < $1.key }) {
            t += "<tr><td class=\"muted\">&nbsp;&nbsp;\(esc(reason.replacingOccurrences(of: "_", with: " ")))</td><td class=\"num muted\">\(num(n))</td></tr>\n"
        }
        return t + "</table>\n"
    }

    /// With a `schedule`: recipients and sends per time zone, most recipients first, and sends by
    /// the hour of the recipients' own clocks.
    static func zoneSection(_ s: Summary) -> String {
        guard let d = s.delivery, !d.byZone.isEmpty else { return "" }
        var t = "<h2>By time zone</h2>\n"
        if let next = s.nextDueAt { t += "<p>The next recipients are due at \(esc(next)) (UTC), when their local window opens.</p>\n" }
        t += "<table id=\"zones\"><tr><th>Time zone</th><th class=\"num\">Recipients</th><th class=\"num\">Sent</th></tr>\n"
        let zones = d.byZone.sorted { ($0.value.recipients, $1.key) > ($1.value.recipients, $0.key) }
        for (zone, c) in zones.prefix(50) {
            t += "<tr><td>\(esc(zone))</td><td class=\"num\">\(num(c.recipients))</td><td class=\"num\">\(num(c.sent))</td></tr>\n"
        }
        if zones.count > 50 {
            t += "<tr><td class=\"muted\">\(num(zones.count - 50)) more time zones (deliveries.csv has every recipient's)</td><td></td><td></td></tr>\n"
        }
        t += "</table>\n"
        if let hours = d.sentByLocalHour {
            t += "<h2>Sent by the recipients' own clock</h2>\n<table id=\"local-hours\"><tr><th>Local hour</th><th class=\"num\">Sent</th></tr>\n"
            for (hour, n) in hours.enumerated() where n > 0 {
                t += "<tr><td>\(String(format: "%02d:00–%02d:59", hour, hour))</td><td class=\"num\">\(num(n))</td></tr>\n"
            }
            t += "</table>\n"
        }
        return t
    }

    static func speedSection(_ s: Summary) -> String {
        var t = "<h2>Speed</h2>\n<table id=\"speed\">\n"
        t += "<tr><td>Time taken (all runs of the campaign together)</td><td class=\"num\">\(String(format: "%.1f", s.durationSeconds)) s</td></tr>\n"
        if let r = s.sendsPerSecond { t += "<tr><td>Average rate</td><td class=\"num\">\(num(Int(r.rounded()))) per second</td></tr>\n" }
        if let d = s.delivery, let p50 = d.latencyPercentile(0.5), let p95 = d.latencyPercentile(0.95), let p99 = d.latencyPercentile(0.99) {
            t += "<tr><td>Apple's answer time: typical / slow (95%) / slowest (99%)</td><td class=\"num\">\(p50) / \(p95) / \(p99) ms</td></tr>\n"
        }
        let c = s.figures.counters
        t += "<tr><td>Connections to Apple opened</td><td class=\"num\">\(num(c.connectionsOpened))</td></tr>\n"
        t += "<tr><td>Attempts retried</td><td class=\"num\">\(num(c.retries))</td></tr>\n"
        return t + "</table>\n"
    }

    static func meaning(_ reason: String) -> String {
        switch reason {
        case "Unregistered": return "The app was removed from the device or its notifications were turned off; the token is dead (unregistered.csv)."
        case "ExpiredToken": return "The device token expired (unregistered.csv)."
        case "BadDeviceToken": return "Apple does not know this token here; often a test (sandbox) token sent to production or the other way round (rejected-tokens.csv)."
        case "DeviceTokenNotForTopic": return "The token belongs to another app (rejected-tokens.csv)."
        case "suppression_list": return "Apple said earlier that this token is dead, and the device has not registered again since."
        case "vanished_from_audience": return "Removed from the audience file while the campaign was running."
        case "gave_up": return "Kept failing for too long; herald stopped trying."
        case "window_missed": return "Its local sending window could not open (the date has passed there, quiet hours, or the deadline)."
        case "frequency_cap": return "The device already had as many pushes of this kind as the frequency cap allows."
        case "silent_budget": return "The device already had its background pushes for the hour."
        default:
            if reason.hasPrefix("connection_error") { return "The connection to Apple failed; tried again later." }
            return APNsReason(reason).entry?.meaning ?? "An answer herald does not know."
        }
    }

    static func did(_ action: String) -> String {
        switch action {
        case "permanent": return "Not retried"
        case "retry_after_delay", "retry_on_new_connection", "refresh_token_and_retry": return "Retries it"
        case "abort_campaign": return "Stopped the campaign: the setup must be fixed"
        case "gave_up": return "Gave up"
        case "not_sent": return "Not sent"
        default: return "Not retried"
        }
    }

    /// `HH:MM:SS` of an ISO 8601 UTC time.
    static func clock(_ iso: String) -> String {
        guard let t = iso.firstIndex(of: "T") else { return iso }
        return String(iso[iso.index(after: t)...].prefix(8))
    }

    static func num(_ n: Int) -> String {
        let digits = String(abs(n))
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return n < 0 ? "-" + out : out
    }

    static func esc(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
