import Foundation
import HeraldCore
import HeraldReports

/// `--metrics-file path.prom`: the run's figures in Prometheus' text exposition format, for
/// node_exporter's textfile collector (https://github.com/prometheus/node_exporter#textfile-collector).
///
/// Written periodically while the run goes and once at the end, each time to a temporary file in
/// the same directory and then renamed over the old one: "to atomically push a file, write it
/// to a temporary file and then move it", as the collector's docs say, so a scrape never reads
/// half a file. The temporary name does not end in `.prom`, so the collector never reads it.
///
/// Mode 0644, unlike the state file and reports (0600): the file holds counts, a campaign name and
/// APNs reasons, never a token or a secret, and the collector usually runs as another user
/// (`node_exporter`) that must be able to read it; 0600 would make scrapes fail silently.
public struct MetricsFile: Sendable {
    public let path: String
    /// `campaign` (as written in the job: stable across `{date}` periods, which alerts need) and,
    /// for a shard, `shard` and `shards`.
    public let labels: [(String, String)]

    public init(path: String, campaign: String, shard: Shard?) {
        self.path = path
        labels = RunMetrics(campaign: campaign, shard: shard).labels
    }

    /// What the end of a run adds to the live counters.
    public struct Final: Sendable {
        public var summary: Summary?
        public var exitCode: Int32
        public var counters: DeliveryCounters?
        public init(summary: Summary?, exitCode: Int32, counters: DeliveryCounters? = nil) {
            self.summary = summary; self.exitCode = exitCode; self.counters = counters
        }
    }

    /// Renders and atomically replaces the file. `final` is nil for the periodic writes.
    public func write(_ s: RunProgress.Snapshot, final: Final? = nil, now: Date = Date()) throws(MetricsError) {
        let previous = Self.lastSuccess(in: path)
        let success = final.map { $0.exitCode == 0 } ?? false
        let text = render(s, final: final, lastSuccess: success ? now : previous, now: now)
        try Self.replace(path, with: text)
    }

    func render(_ s: RunProgress.Snapshot, final: Final?, lastSuccess: Date?, now: Date) -> String {
        RunMetrics(labels: labels).render(s, final: final, lastSuccess: lastSuccess, now: now)
    }
}

/// The run's figures in Prometheus' text exposition format, labelled with the campaign (and shard):
/// what the metrics file holds and what `Pushgateway` pushes.
struct RunMetrics {
    let labels: [(String, String)]

    init(campaign: String, shard: Shard?) {
        var labels = [("campaign", campaign)]
        if let shard { labels += [("shard", String(shard.index)), ("shards", String(shard.count))] }
        self.labels = labels
    }

    init(labels: [(String, String)]) { self.labels = labels }

    func render(_ s: RunProgress.Snapshot, final: MetricsFile.Final?, lastSuccess: Date?, now: Date) -> String {
        var out = PrometheusText(labels: labels)
        out.metric("herald_run_in_progress", "gauge", "1 while herald run works on the campaign, 0 once it has exited.", final == nil ? 1 : 0)
        out.metric("herald_run_duration_seconds", "gauge", "Seconds since this herald run started.",
                   now.timeIntervalSince(s.runStarted))
        out.metric("herald_audience_input_bytes", "gauge", "Size on disk of the audience files (compressed size for gzip).", Double(s.inputBytesTotal))
        out.metric("herald_audience_read_bytes", "gauge", "Bytes of the audience files read so far by this run.", Double(s.inputBytesRead))
        out.metric("herald_audience_rows_read", "gauge", "Audience rows read by this run.", Double(s.rowsRead))

        out.header("herald_attempts_total", "counter", "Answers recorded by this run, by resulting status and APNs reason (\"\" for none).")
        for (key, n) in s.attemptsByReason.sorted(by: { ($0.key.status, $0.key.reason) < ($1.key.status, $1.key.reason) }) {
            out.sample("herald_attempts_total", [("status", key.status), ("reason", key.reason)], Double(n))
        }

        out.header("herald_recipients", "gauge", "Recipients of the campaign run by report status.")
        if let summary = final?.summary {
            for status in RecipientStatus.allCases { out.sample("herald_recipients", [("status", status.rawValue)], Double(summary.count(status))) }
        } else if s.phase == .sending {
            // Live: the state file's counts when sending started, moved by this run's answers.
            let sent = s.sentBefore + s.sent, failed = s.failedBefore + s.failed
            let pending = max(0, s.sendTotal - s.finishedThisRun)
            let live = ["sent": sent, "failed": failed, "suppressed": s.otherFinalBefore["suppressed"] ?? 0,
                        "throttled": s.otherFinalBefore["throttled"] ?? 0, "pending": pending]
            for status in RecipientStatus.allCases { out.sample("herald_recipients", [("status", status.rawValue)], Double(live[status.rawValue] ?? 0)) }
        }
        if let summary = final?.summary {
            out.header("herald_recipients_by_reason", "gauge", "Recipients by APNs reason (as summary.json by_reason).")
            for (reason, n) in summary.byReason.sorted(by: { $0.key < $1.key }) {
                out.sample("herald_recipients_by_reason", [("reason", reason)], Double(n))
            }
            if let apps = summary.apps {
                // Its own family: `app` and `environment` labels on herald_recipients would make a
                // sum over it count every recipient twice.
                out.header("herald_app_recipients", "gauge", "Recipients by app, APNs environment and report status (as summary.json apps).")
                for a in apps {
                    for status in RecipientStatus.allCases {
                        out.sample("herald_app_recipients", [("app", a.app), ("environment", a.environment), ("status", status.rawValue)],
                                   Double(a.counts[status] ?? 0))
                    }
                }
            }
            out.header("herald_audience_rows", "gauge", "Audience rows by kind (as summary.json counts).")
            for (kind, n) in [("rows", summary.rows), ("valid", summary.valid), ("invalid", summary.invalid),
                              ("duplicates", summary.duplicates), ("distinct", summary.distinct)] {
                out.sample("herald_audience_rows", [("kind", kind)], Double(n))
            }
            out.header("herald_invalid_rows", "gauge", "Invalid audience rows by reason (as summary.json invalid_by_reason).")
            for (reason, n) in summary.invalidByReason.sorted(by: { $0.key < $1.key }) {
                out.sample("herald_invalid_rows", [("reason", reason)], Double(n))
            }
            if let finished = summary.finishedAt.flatMap(MetricsFile.parseTime) {
                out.metric("herald_campaign_finished_timestamp_seconds", "gauge", "When the campaign run finished (every recipient final).",
                           finished.timeIntervalSince1970)
            }
        }
        if let c = final?.counters {
            out.metric("herald_connections_opened_total", "counter", "TLS connections opened to APNs by the run.", Double(c.connectionsOpened))
            out.metric("herald_jwts_signed_total", "counter", "Provider tokens (JWTs) signed by the run.", Double(c.jwtsSigned))
            out.metric("herald_retries_total", "counter", "Attempts that ended retryable (429, 5xx, connection lost).", Double(c.retries))
            out.metric("herald_throttle_deferrals_total", "counter", "Background pushes held back by the silent-push budget.", Double(c.throttleDeferrals))
        }
        if let final {
            out.metric("herald_last_exit_code", "gauge", "Exit code of the last herald run (0 finished, 2 usage, 3 fatal APNs, 4 incomplete, 5 invalid rows, 75 locked).",
                       Double(final.exitCode))
            out.metric("herald_last_run_finished_timestamp_seconds", "gauge", "When the last herald run of this job exited, whatever its exit code.",
                       now.timeIntervalSince1970)
        }
        out.metric("herald_last_update_timestamp_seconds", "gauge", "When herald last wrote this file.", now.timeIntervalSince1970)
        if let lastSuccess {
            out.metric("herald_last_success_timestamp_seconds", "gauge", "When a herald run of this job last exited 0.", lastSuccess.timeIntervalSince1970)
        }
        return out.text
    }
}

extension MetricsFile {
    /// The previous file's last success time: a failed run must not make it vanish (an alert on
    /// `time() - herald_last_success_timestamp_seconds` would then see no series, not a stale one).
    static func lastSuccess(in path: String) -> Date? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("herald_last_success_timestamp_seconds") {
            if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return Date(timeIntervalSince1970: value) }
        }
        return nil
    }

    static func parseTime(_ text: String) -> Date? { UTCText.parse(text) }

    /// Temp file in the same directory (rename is atomic only within one file system), fsync,
    /// rename: HeraldReports' AtomicFile, readable by the collector's user.
    static func replace(_ path: String, with text: String) throws(MetricsError) {
        do throws(ReportError) {
            let file = try AtomicFile(path: path, mode: 0o644)
            try file.write(text)
            try file.commit()
        } catch {
            throw MetricsError(path: path, why: error.why)
        }
    }
}

/// The metrics file could not be written. A run never fails for it: herald warns and goes on.
public struct MetricsError: Error, CustomStringConvertible {
    public let path: String
    public let why: String
    public var description: String { "cannot write the metrics file \(path): \(why)" }
}

/// Prometheus text format 0.0.4: `# HELP`, `# TYPE`, then `name{label="value"} number` lines.
struct PrometheusText {
    let labels: [(String, String)]
    var text = ""

    mutating func header(_ name: String, _ type: String, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    mutating func sample(_ name: String, _ extra: [(String, String)], _ value: Double) {
        let all = labels + extra
        let rendered = all.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",")
        text += "\(name){\(rendered)} \(Self.number(value))\n"
    }

    mutating func metric(_ name: String, _ type: String, _ help: String, _ value: Double) {
        header(name, type, help)
        sample(name, [], value)
    }

    /// Label values escape backslash, double quote and newline.
    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }

    static func number(_ v: Double) -> String {
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        // A value within half a millisecond of a whole number is written as that number, as it
        // reads back: the last success time is carried from one file to the next by reading it.
        let text = String(format: "%.3f", v)
        return text.hasSuffix(".000") ? String(text.dropLast(4)) : text
    }
}
