import Foundation
import HeraldCore
import HeraldState

/// `herald report --merge`: one report set from the report sets of a sharded campaign's shards
/// (`--shard k/n`, each with its own state file and reports directory). Works from the shards'
/// report files, not their state files, so shards run on different machines can be merged from
/// copied directories. Streams deliveries (memory is one line); invalid rows are kept as a set of
/// lines because every shard reads the whole audience and may report the same unusable row.
///
/// The merged summary: recipients, statuses, reasons, duplicates and counters are sums (each token
/// belongs to exactly one shard); invalid rows are counted once; `duration_seconds` is the longest
/// shard's (they run in parallel) and `sends_per_second` the sum of the shards' rates; latency
/// percentiles and the send-rate chart are computed again from the merged deliveries.
public enum ReportMerger {
    public struct MergeError: Error, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }

    struct Shard {
        var dir: String
        var summary: Summary
        var deliveries: String
    }

    public static func merge(shardDirs: [String], into out: String, compress: Bool = false) throws -> Summary {
        guard !shardDirs.isEmpty else { throw MergeError("--merge needs at least one shard reports directory") }
        var shards: [Shard] = []
        for dir in shardDirs {
            let summaryPath = dir + "/summary.json"
            guard let data = FileManager.default.contents(atPath: summaryPath) else {
                throw MergeError("\(summaryPath): missing (is \(dir) a shard's reports directory?)")
            }
            let summary: Summary
            do { summary = try Summary(summaryJSON: data) } catch {
                throw MergeError("\(summaryPath): not a summary.json herald wrote (\(Self.decodingProblem(error)))")
            }
            let candidates = [dir + "/deliveries.ndjson", dir + "/deliveries.ndjson.gz"]
            guard let deliveries = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
                throw MergeError("\(dir): no deliveries.ndjson or deliveries.ndjson.gz (written by herald 0.8 and later)")
            }
            shards.append(Shard(dir: dir, summary: summary, deliveries: deliveries))
        }
        let campaigns = Set(shards.map(\.summary.campaign))
        guard campaigns.count == 1, let campaign = campaigns.first else {
            throw MergeError("the directories hold reports of different campaigns (\(campaigns.sorted().joined(separator: ", "))): merge the shards of one campaign")
        }
        if shards.map({ URL(fileURLWithPath: $0.dir).standardizedFileURL.path }).contains(URL(fileURLWithPath: out).standardizedFileURL.path) {
            throw MergeError("the output directory \(out) is one of the shards' directories: choose another")
        }

        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let files = ReportFiles(directory: out, compress: compress)
        let broadcast = shards.contains { $0.summary.broadcastChannels != nil }
        let writer = try DeliveryReportWriter(files: files, broadcast: broadcast)
        var byStatus: [RecipientStatus: Int] = [:]
        var byReason: [String: Int] = [:]
        for shard in shards {
            let reader = try ReportLineReader(path: shard.deliveries)
            var number = 0
            while let line = try reader.next() {
                number += 1
                if line.isEmpty { continue }
                guard let row = deliveryRow(line) else { throw MergeError("\(shard.deliveries) line \(number): not a deliveries.ndjson record") }
                try writer.add(row)
                byStatus[row.status.reportStatus, default: 0] += 1
                if !row.reason.isEmpty { byReason[row.reason, default: 0] += 1 }
            }
        }
        try writer.commit()

        // invalid.csv: each distinct row once, in shard order.
        let invalid = try AtomicFile(path: files.invalidPath)
        try invalid.write(CSV.line(ReportWriter.invalidColumns))
        var seen = Set<String>()
        var invalidByReason: [String: Int] = [:]
        for shard in shards {
            let path = shard.dir + "/invalid.csv"
            guard FileManager.default.fileExists(atPath: path) else { continue }
            let reader = try ReportLineReader(path: path)
            _ = try reader.next()  // header
            while let line = try reader.next() {
                guard !line.isEmpty, seen.insert(line).inserted else { continue }
                try invalid.write(line + "\n")
                let fields = CSV.split(line)
                if fields.count >= 3 { invalidByReason[fields[2], default: 0] += 1 }
            }
        }
        try invalid.commit()

        let distinct = byStatus.values.reduce(0, +)
        let duplicates = shards.reduce(0) { $0 + $1.summary.duplicates }
        var figures = RunFigures()
        figures.activeSeconds = shards.map(\.summary.figures.activeSeconds).max() ?? 0
        figures.counters.retries = shards.reduce(0) { $0 + $1.summary.figures.counters.retries }
        figures.counters.connectionsOpened = shards.reduce(0) { $0 + $1.summary.figures.counters.connectionsOpened }
        figures.counters.jwtsSigned = shards.reduce(0) { $0 + $1.summary.figures.counters.jwtsSigned }
        figures.counters.throttleDeferrals = shards.reduce(0) { $0 + $1.summary.figures.counters.throttleDeferrals }
        let exitCodes = shards.compactMap(\.summary.figures.lastExitCode)
        figures.lastExitCode = exitCodes.count == shards.count ? exitCodes.max() : nil
        let started = shards.map(\.summary.startedAt).filter { !$0.isEmpty }.min() ?? ""
        let finished = shards.map(\.summary.finishedAt)
        let runIds = shards.map(\.summary.runId)
        var statuses: [RecipientStatus: Int] = [:]
        for s in RecipientStatus.allCases { statuses[s] = byStatus[s] ?? 0 }
        let rate = shards.reduce(0.0) { $0 + ($1.summary.extra.sendsPerSecond ?? 0) }

        var summary = Summary(campaign: campaign, runId: "merged:" + runIds.joined(separator: ","), startedAt: started,
                              finishedAt: finished.contains(where: { $0 == nil }) ? nil : finished.compactMap { $0 }.max(),
                              rows: distinct + duplicates + seen.count, valid: distinct + duplicates, distinct: distinct,
                              invalid: seen.count, duplicates: duplicates, byStatus: statuses, byReason: byReason,
                              invalidByReason: invalidByReason,
                              audienceChanged: shards.contains { $0.summary.audienceChanged },
                              newRecipients: shards.reduce(0) { $0 + $1.summary.newRecipients },
                              vanishedRecipients: shards.reduce(0) { $0 + $1.summary.vanishedRecipients },
                              extra: SummaryExtras(sendsPerSecond: rate > 0 ? rate : nil), figures: figures, delivery: writer.figures)
        summary.shardRunIds = runIds
        if broadcast { summary.broadcastChannels = distinct }
        summary.experiment = writer.figures.variants.map(VariantCount.ordered)
        summary.apps = writer.figures.apps.map(AppCount.ordered)
        try ReportWriter.writeSummary(summary, files: files)
        return summary
    }

    /// Which key was missing or of the wrong type, for the error message.
    static func decodingProblem(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "no \((context.codingPath + [key]).map(\.stringValue).joined(separator: "."))"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        case DecodingError.dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not JSON" : "\(context.codingPath.map(\.stringValue).joined(separator: ".")) is malformed"
        default:
            return "\(error)"
        }
    }

    /// A deliveries.ndjson line back into the row it was written from.
    static func deliveryRow(_ line: String) -> DeliveryRow? {
        guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let token = o["token"] as? String ?? o["channel_id"] as? String, let statusText = o["status"] as? String,
              let status = StoredStatus(rawValue: statusText) else { return nil }
        func int(_ k: String) -> Int? { (o[k] as? NSNumber)?.intValue }
        return DeliveryRow(file: o["file"] as? String ?? "", line: int("line") ?? 0, recipientId: o["recipient_id"] as? String ?? "",
                           token: token, status: status, httpStatus: int("http_status"), reason: o["reason"] as? String ?? "",
                           apnsId: o["apns_id"] as? String ?? "", attempts: int("attempts") ?? 0,
                           firstAttemptAt: o["first_attempt_at"] as? String, lastAttemptAt: o["last_attempt_at"] as? String,
                           invalidatedAt: (o["invalidated_at"] as? String).flatMap(RegistrationTime.iso8601Milliseconds),
                           apnsUniqueId: o["apns_unique_id"] as? String, latencyMs: int("latency_ms"),
                           timezone: o["timezone"] as? String,
                           dueAt: (o["due_at"] as? String).flatMap(RegistrationTime.iso8601Milliseconds).map { Double($0) / 1000 },
                           variant: o["variant"] as? String, rollout: o["rollout"] as? Bool,
                           app: o["app"] as? String, environment: o["environment"] as? String)
    }
}
