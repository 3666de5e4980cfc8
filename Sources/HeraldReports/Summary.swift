import Foundation
import HeraldCore
import HeraldState

/// Figures the pipeline knows that the state file does not (this invocation's rate and exit code).
/// Each one, when set, replaces the value the state file gives.
public struct SummaryExtras: Sendable {
    public var durationSeconds: Double?
    public var sendsPerSecond: Double?
    public var exitCode: Int?
    /// This invocation's delivery events, one per configured sink (`events` in the job); nil: none configured.
    public var events: [EventSinkSummary]?
    public init(durationSeconds: Double? = nil, sendsPerSecond: Double? = nil, exitCode: Int? = nil, events: [EventSinkSummary]? = nil) {
        self.durationSeconds = durationSeconds; self.sendsPerSecond = sendsPerSecond; self.exitCode = exitCode; self.events = events
    }
}

/// What one events sink (`url` or `file`) did during an invocation (summary.json's `events`).
public struct EventSinkSummary: Sendable, Equatable {
    /// `url` or `file`.
    public var sink: String
    /// Events it took during this invocation.
    public var delivered: Int
    /// Events still in the outbox for it when the invocation ended: the next run delivers them.
    public var waiting: Int
    /// Batches it refused or did not answer (each tried again, unless `error` stopped the sink).
    public var failedAttempts: Int
    /// Why it was stopped (a 4xx, a file that cannot be written), or nil.
    public var error: String?
    public init(sink: String, delivered: Int = 0, waiting: Int = 0, failedAttempts: Int = 0, error: String? = nil) {
        self.sink = sink; self.delivered = delivered; self.waiting = waiting; self.failedAttempts = failedAttempts; self.error = error
    }

    var json: JSONValue {
        .object([
            .init("delivered", .number(String(delivered))), .init("waiting", .number(String(waiting))),
            .init("failed_attempts", .number(String(failedAttempts))), .init("error", error.map(JSONValue.string) ?? .null),
        ])
    }
}

/// summary.json. Key names are frozen: later versions add keys, never rename them.
public struct Summary: Sendable {
    public var campaign: String
    public var runId: String
    public var startedAt: String
    public var finishedAt: String?
    public var rows: Int
    public var valid: Int
    public var distinct: Int
    public var invalid: Int
    public var duplicates: Int
    public var byStatus: [RecipientStatus: Int]
    public var byReason: [String: Int]
    public var invalidByReason: [String: Int]
    /// The audience files changed while the run was unfinished (a resume read them again).
    public var audienceChanged: Bool = false
    public var newRecipients: Int = 0
    public var vanishedRecipients: Int = 0
    public var extra: SummaryExtras
    /// Time spent sending and the sending stage's counters, as the run row keeps them.
    public var figures = RunFigures()
    /// Latencies, send rate, unregistered and rejected counts: nil when the rows were not read.
    public var delivery: DeliveryFigures?
    /// Set by `herald report --merge`: the run ids of the shards merged.
    public var shardRunIds: [String]? = nil
    /// An unfinished run's next due time (`schedule`, a deferred frequency cap), ISO 8601 UTC.
    public var nextDueAt: String? = nil
    /// An operator's hold on the campaign (`herald pause`, `herald cancel`), if any.
    public var control: CampaignControl? = nil
    /// A broadcast campaign (`push.broadcast`): its recipients are channels; nil for device pushes.
    public var broadcastChannels: Int? = nil
    /// An `experiment`: recipients per arm and status (variants in the test, the holdout, the
    /// winner's rollout, those waiting for it); nil for a campaign without one.
    public var experiment: [VariantCount]? = nil
    /// Many apps: recipients per app and environment and status; nil for a campaign for one app
    /// in one environment.
    public var apps: [AppCount]? = nil

    public func count(_ s: RecipientStatus) -> Int { byStatus[s] ?? 0 }

    /// Seconds spent sending over every invocation of the run.
    public var durationSeconds: Double { extra.durationSeconds ?? figures.activeSeconds }
    /// Recipients sent per second of `durationSeconds`.
    public var sendsPerSecond: Double? {
        if let r = extra.sendsPerSecond { return r }
        return durationSeconds > 0 ? Double(count(.sent)) / durationSeconds : nil
    }
    public var exitCode: Int? { extra.exitCode ?? figures.lastExitCode }

    static func make(state: RunState, campaign: String, run: RunInfo, finishedAt: String?, extra: SummaryExtras,
                     delivery: DeliveryFigures?) throws -> Summary {
        var byStatus: [RecipientStatus: Int]
        let distinct: Int
        let byReason: [String: Int]
        if let delivery {
            // Counted as the report rows streamed past: the same rows, no further pass.
            byStatus = delivery.byStatus
            distinct = delivery.recipients
            byReason = delivery.byReason
        } else {
            byStatus = [:]
            for s in RecipientStatus.allCases { byStatus[s] = 0 }
            for (s, n) in try state.statusCounts() { byStatus[s.reportStatus, default: 0] += n }
            distinct = try state.recipientCount()
            byReason = try state.reasonCounts()
        }
        let invalid = try state.invalidRowCount()
        // rows = valid + invalid; valid = distinct + duplicates (every valid row is either the first of its token or a duplicate).
        var summary = Summary(campaign: campaign, runId: run.runId, startedAt: run.startedAt, finishedAt: finishedAt,
                       rows: run.rows, valid: run.rows - invalid, distinct: distinct, invalid: invalid, duplicates: run.duplicates,
                       byStatus: byStatus, byReason: byReason, invalidByReason: try state.invalidCounts(),
                       audienceChanged: run.audienceChanged, newRecipients: run.newRecipients,
                       vanishedRecipients: run.vanishedRecipients, extra: extra, figures: try state.figures(), delivery: delivery,
                       nextDueAt: finishedAt == nil ? try state.nextDueTime().map { RegistrationTime.iso8601(milliseconds: Int64($0.timeIntervalSince1970 * 1000)) } : nil,
                       broadcastChannels: run.broadcast ? distinct : nil)
        summary.control = try state.store.control()
        if let delivery { summary.experiment = delivery.variants.map(VariantCount.ordered) } else {
            let arms = try state.variantCounts()
            summary.experiment = arms.isEmpty ? nil : arms
        }
        if let delivery { summary.apps = delivery.apps.map(AppCount.ordered) } else {
            let apps = try state.appCounts()
            summary.apps = apps.isEmpty ? nil : apps
        }
        return summary
    }

    /// What herald does with a reason, from the one reason table in HeraldCore (`gave_up` and
    /// connection errors are herald's own).
    static func action(for reason: String) -> String {
        if reason == "gave_up" { return "gave_up" }
        if ["vanished_from_audience", "suppression_list", "silent_budget", "window_missed", "frequency_cap"].contains(reason)
            || reason == "cancelled" || reason.hasPrefix("cancelled: ") { return "not_sent" }
        if reason.hasPrefix("connection_error") { return ReasonAction.retryOnNewConnection.rawValue }
        if reason.hasPrefix("HTTP ") { return "unknown" }
        return APNsReason(reason).entry?.action.rawValue ?? "unknown"
    }

    /// summary.json's `experiment`: `winner` (the variant rolled out, or null) and `arms`, one
    /// object per arm: `variant` (a name, `holdout`, or null while waiting for the winner),
    /// `rollout`, `recipients` and a count per report status.
    /// summary.json's `apps`: one object per app and environment: `app`, `environment`,
    /// `recipients` and a count per report status.
    public static func appsJSON(_ apps: [AppCount]) -> JSONValue {
        .array(apps.map { a in
            .object([
                .init("app", .string(a.app)), .init("environment", .string(a.environment)),
                .init("recipients", .number(String(a.total))),
                .init("counts", .object(RecipientStatus.allCases.map { .init($0.rawValue, .number(String(a.counts[$0] ?? 0))) })),
            ])
        })
    }

    public static func experimentJSON(_ arms: [VariantCount]) -> JSONValue {
        let winner = arms.first { $0.rollout && $0.variant != nil }?.variant
        return .object([
            .init("winner", winner.map(JSONValue.string) ?? .null),
            .init("arms", .array(arms.map { arm in
                .object([
                    .init("variant", arm.variant.map(JSONValue.string) ?? .null), .init("rollout", .bool(arm.rollout)),
                    .init("recipients", .number(String(arm.total))),
                    .init("counts", .object(RecipientStatus.allCases.map { .init($0.rawValue, .number(String(arm.counts[$0] ?? 0))) })),
                ])
            })),
        ])
    }

    public var json: String {
        var counts: [JSONValue.Member] = [
            .init("rows", .number(String(rows))), .init("valid", .number(String(valid))),
            .init("invalid", .number(String(invalid))), .init("duplicates", .number(String(duplicates))),
        ]
        for s in RecipientStatus.allCases { counts.append(.init(s.rawValue, .number(String(count(s))))) }
        counts.append(.init("distinct", .number(String(distinct))))
        func dict(_ d: [String: Int]) -> JSONValue {
            .object(d.sorted { $0.key < $1.key }.map { JSONValue.Member($0.key, .number(String($0.value))) })
        }
        func int(_ n: Int?) -> JSONValue { n.map { .number(String($0)) } ?? .null }
        var members: [JSONValue.Member] = [
            .init("campaign", .string(campaign)), .init("run_id", .string(runId)),
            .init("started_at", .string(startedAt)), .init("finished_at", finishedAt.map(JSONValue.string) ?? .null),
            .init("counts", .object(counts)), .init("by_reason", dict(byReason)), .init("invalid_by_reason", dict(invalidByReason)),
            .init("reason_actions", .object(byReason.keys.sorted().map { JSONValue.Member($0, .string(Self.action(for: $0))) })),
        ]
        members.append(.init("audience_changed", .bool(audienceChanged)))
        members.append(.init("new_recipients", .number(String(newRecipients))))
        members.append(.init("vanished_recipients", .number(String(vanishedRecipients))))
        members.append(.init("duration_seconds", .number(String(format: "%.3f", durationSeconds))))
        members.append(.init("sends_per_second", sendsPerSecond.map { .number(String(format: "%.1f", $0)) } ?? .null))
        members.append(.init("exit_code", int(exitCode)))
        members.append(.init("latency_p50_ms", int(delivery?.latencyPercentile(0.50))))
        members.append(.init("latency_p95_ms", int(delivery?.latencyPercentile(0.95))))
        members.append(.init("latency_p99_ms", int(delivery?.latencyPercentile(0.99))))
        members.append(.init("retries", .number(String(figures.counters.retries))))
        members.append(.init("connections_opened", .number(String(figures.counters.connectionsOpened))))
        members.append(.init("jwts_signed", .number(String(figures.counters.jwtsSigned))))
        members.append(.init("throttle_deferrals", .number(String(figures.counters.throttleDeferrals))))
        members.append(.init("unregistered", int(delivery?.unregistered)))
        members.append(.init("rejected_tokens", int(delivery?.rejectedTokens)))
        members.append(.init("next_due_at", nextDueAt.map(JSONValue.string) ?? .null))
        members.append(.init("sends_by_local_hour", delivery?.sentByLocalHour.map { .array($0.map { .number(String($0)) }) } ?? .null))
        if let events = extra.events { members.append(.init("events", .object(events.map { .init($0.sink, $0.json) }))) }
        members.append(.init("broadcast_channels", int(broadcastChannels)))
        members.append(.init("control", control?.json ?? .null))
        members.append(.init("experiment", experiment.map(Self.experimentJSON) ?? .null))
        members.append(.init("apps", apps.map(Self.appsJSON) ?? .null))
        if let shardRunIds { members.append(.init("shard_run_ids", .array(shardRunIds.map(JSONValue.string)))) }
        return JSONValue.object(members).compactText + "\n"
    }
}
