import Foundation
import HeraldDelivery
import Logging

/// `--pushgateway` / `ops.pushgateway`: the run's metrics (the metrics file's, `RunMetrics`) pushed
/// to a Prometheus Pushgateway, for runs no node's textfile collector sees (a Kubernetes Job).
///
/// Pushed with PUT, which replaces the whole group, under job `herald` and the grouping labels
/// `campaign` (as written in the job) and, for a shard, `shard`
/// (https://github.com/prometheus/pushgateway#url: `/metrics/job/<job>{/<label>/<value>}`; values
/// base64url-encoded with the `@base64` suffix, so any campaign name fits a path segment).
/// Periodically while the run goes and once at the end. The group stays after the run, as
/// Prometheus recommends for batch jobs (https://prometheus.io/docs/practices/pushing/): it
/// carries `herald_last_exit_code` and `herald_last_run_finished_timestamp_seconds`, so an alert
/// can fire on a campaign that failed or did not run. A push that fails is logged, never fatal.
public struct Pushgateway: Sendable {
    public let url: String
    let metrics: RunMetrics
    public var timeoutSeconds: Double = 5

    public init(url: String, campaign: String, shard: Shard?) {
        var group = "/metrics/job/herald/campaign@base64/" + Self.base64url(campaign)
        if let shard { group += "/shard/\(shard.index)" }
        self.url = (url.hasSuffix("/") ? String(url.dropLast()) : url) + group
        metrics = RunMetrics(campaign: campaign, shard: shard)
    }

    /// Pushes the figures; `final` at the end of the run. Tries a final push 3 times (a second
    /// apart), a periodic one once: the next period pushes again anyway.
    public func push(_ s: RunProgress.Snapshot, final: MetricsFile.Final? = nil, now: Date = Date()) -> PushgatewayError? {
        let text = metrics.render(s, final: final, lastSuccess: final.map { $0.exitCode == 0 } == true ? now : nil, now: now)
        let call = HTTPCall(method: "PUT", url: url, headers: ["Content-Type: text/plain; version=0.0.4"], body: Array(text.utf8),
                            timeoutSeconds: timeoutSeconds)
        switch call.perform(attempts: final == nil ? 1 : 3) {
        case .success(let answer) where answer.isSuccess:
            return nil
        case .success(let answer):
            // The URL's user:password@ may come back quoted: a short excerpt, secrets cut.
            let said = call.redaction.excerpt(answer.body)
            return PushgatewayError(host: host, why: "HTTP \(answer.status)\(said.isEmpty ? "" : ": \(said)")")
        case .failure(let error):
            return PushgatewayError(host: host, why: error.description)
        }
    }

    private var host: String { URL(string: url).map { "\($0.host ?? "")\($0.port.map { ":\($0)" } ?? "")" } ?? "its URL" }

    static func base64url(_ text: String) -> String {
        let encoded = Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        // The Pushgateway reads the value padded or not; "=" padding is kept, as its docs show.
        return encoded.isEmpty ? "=" : encoded
    }
}

/// A push the Pushgateway did not take. A run never fails for it: herald warns and goes on.
public struct PushgatewayError: Error, CustomStringConvertible {
    public let host: String
    public let why: String
    public var description: String { "cannot push metrics to the Pushgateway at \(host): \(why)" }
}
