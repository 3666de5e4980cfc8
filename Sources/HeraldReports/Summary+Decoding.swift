import Foundation
import HeraldCore
import HeraldState

extension Summary {
    /// A summary.json read back (`herald report --merge` reads each shard's). Only the keys
    /// `Summary.json` writes are read; keys a later herald adds are ignored. Latency figures and
    /// the send-rate chart are not read back: the merger computes them again from the rows.
    public init(summaryJSON data: Data) throws {
        let file = try JSONDecoder().decode(SummaryFile.self, from: data)
        var byStatus: [RecipientStatus: Int] = [:]
        for status in RecipientStatus.allCases { byStatus[status] = file.counts[status.rawValue] ?? 0 }
        var figures = RunFigures()
        figures.activeSeconds = file.durationSeconds ?? 0
        figures.counters.retries = file.retries ?? 0
        figures.counters.connectionsOpened = file.connectionsOpened ?? 0
        figures.counters.jwtsSigned = file.jwtsSigned ?? 0
        figures.counters.throttleDeferrals = file.throttleDeferrals ?? 0
        figures.lastExitCode = file.exitCode
        self.init(campaign: file.campaign, runId: file.runId, startedAt: file.startedAt, finishedAt: file.finishedAt,
                  rows: file.counts["rows"] ?? 0, valid: file.counts["valid"] ?? 0, distinct: file.counts["distinct"] ?? 0,
                  invalid: file.counts["invalid"] ?? 0, duplicates: file.counts["duplicates"] ?? 0, byStatus: byStatus,
                  byReason: file.byReason ?? [:], invalidByReason: file.invalidByReason ?? [:],
                  audienceChanged: file.audienceChanged ?? false, newRecipients: file.newRecipients ?? 0,
                  vanishedRecipients: file.vanishedRecipients ?? 0,
                  extra: SummaryExtras(sendsPerSecond: file.sendsPerSecond), figures: figures, delivery: nil)
        shardRunIds = file.shardRunIds
        broadcastChannels = file.broadcastChannels
    }
}

/// summary.json's keys as `Summary.json` writes them (docs/reports.md).
private struct SummaryFile: Decodable {
    var campaign: String
    var runId: String
    var startedAt: String
    var finishedAt: String?
    var counts: [String: Int]
    var byReason: [String: Int]?
    var invalidByReason: [String: Int]?
    var audienceChanged: Bool?
    var newRecipients: Int?
    var vanishedRecipients: Int?
    var durationSeconds: Double?
    var sendsPerSecond: Double?
    var exitCode: Int?
    var retries: Int?
    var connectionsOpened: Int?
    var jwtsSigned: Int?
    var throttleDeferrals: Int?
    var shardRunIds: [String]?
    var broadcastChannels: Int?

    enum CodingKeys: String, CodingKey {
        case campaign, counts, retries
        case runId = "run_id", startedAt = "started_at", finishedAt = "finished_at"
        case byReason = "by_reason", invalidByReason = "invalid_by_reason", audienceChanged = "audience_changed"
        case newRecipients = "new_recipients", vanishedRecipients = "vanished_recipients"
        case durationSeconds = "duration_seconds", sendsPerSecond = "sends_per_second", exitCode = "exit_code"
        case connectionsOpened = "connections_opened", jwtsSigned = "jwts_signed", throttleDeferrals = "throttle_deferrals"
        case shardRunIds = "shard_run_ids", broadcastChannels = "broadcast_channels"
    }
}
