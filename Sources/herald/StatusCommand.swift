import ArgumentParser
import Foundation
import HeraldCore
import HeraldJob
import HeraldOperations
import HeraldPipeline
import HeraldReports
import HeraldState

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a campaign's progress from its state file, without changing anything.",
        discussion: "Safe to run while the campaign runs: it only reads the state file and does not take the campaign's lock."
    )

    @Argument(help: "The job file (YAML).")
    var job: String

    @Option(help: "State file to read instead of the job's `state`.")
    var state: String?

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @Option(help: ArgumentHelp("The shard's state file (as `herald run --shard k/n` keeps it); default: JOB_COMPLETION_INDEX and HERALD_SHARD_COUNT when set.", valueName: "k/n"))
    var shard: String?

    func validate() throws {
        if let shard { do { _ = try Shard(text: shard) } catch { throw ValidationError(error.description) } }
    }

    func run() throws {
        let status: CampaignStatus
        do {
            let loaded = try JobLoader.load(path: job, overrides: JobOverrides(statePath: state))
            let spec = try Shard.resolve(option: shard, environment: ProcessInfo.processInfo.environment).map { $0.apply(to: loaded) } ?? loaded
            status = try CampaignStatus.read(spec: spec)
        } catch {
            throw Output.fail(error, during: .preparing)
        }
        let text = json ? Self.json(status) : Self.text(status)
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func iso(_ date: Date) -> String { UTCText.seconds(date) }

    static func text(_ s: CampaignStatus) -> String {
        var lines = ["state     \(s.statePath)"]
        if let pid = s.lockHolder {
            lines.append("lock      held by pid \(pid): a run is in progress")
        } else {
            lines.append("lock      free: no run in progress")
        }
        if let c = s.control {
            lines.append("control   \(c.description)" + (c.action == .paused
                ? ": no run sends anything until `herald resume`" : ": no run sends anything again; give the job a new campaign name to send"))
        }
        if !s.events.isEmpty {
            lines.append("events    " + s.events.map { "\($0.sink) \(Output.number($0.delivered)) delivered, \(Output.number($0.waiting)) waiting in the outbox" }
                .joined(separator: "; "))
        }
        if s.runs.isEmpty { lines.append("runs      none yet: the campaign has never run") }
        for r in s.runs {
            let i = r.info
            lines.append("")
            lines.append("campaign  \(i.campaign)  (run \(i.runId))")
            lines.append("started   \(i.startedAt)")
            let open = [StoredStatus.pending, .inflight, .retry, .scheduled].reduce(0) { $0 + (r.counts[$1] ?? 0) }
            let waiting = r.counts[.awaitingWinner] ?? 0
            let unfinished = open == 0 && waiting > 0
                ? "no: the experiment's test is over and \(Output.number(waiting)) recipients wait for its winner (`herald run JOB --winner NAME`)"
                : "no: rerun `herald run` to resume"
            lines.append("finished  " + (i.finishedAt ?? unfinished))
            let reading = i.ingestComplete ? "read" : "reading (checkpoint: file \(max(i.ingestedFile, 0) + 1), line \(i.ingestedLine))"
            lines.append("audience  \(Output.number(i.rows)) rows \(reading): \(Output.number(r.distinct)) recipients, "
                         + "\(Output.number(i.duplicates)) duplicate rows, \(Output.number(r.invalid)) invalid rows")
            if i.audienceChanged {
                lines.append("changed   audience changed during the run: \(Output.number(i.newRecipients)) new, \(Output.number(i.vanishedRecipients)) vanished")
            }
            let states = StoredStatus.allCases.filter { !r.experiment.isEmpty || !$0.reportStatus.isExperimentOnly || (r.counts[$0] ?? 0) > 0 }
            lines.append("state     " + states.map { "\(Output.number(r.counts[$0] ?? 0)) \($0.rawValue)" }.joined(separator: ", "))
            if let due = r.nextDue {
                let capped = r.capped, windows = (r.counts[.scheduled] ?? 0) - capped
                let why = [windows > 0 ? "\(Output.number(windows)) for their local window" : nil,
                           capped > 0 ? "\(Output.number(capped)) for a frequency-cap slot" : nil].compactMap { $0 }
                lines.append("waiting   \(why.joined(separator: ", ")); the next due at \(Self.iso(due))")
            }
            for arm in r.experiment {
                let counts = RecipientStatus.allCases.compactMap { st in arm.counts[st].map { "\(Output.number($0)) \(st.rawValue)" } }
                lines.append("variant   \(arm.label): \(Output.number(arm.total)) recipients: \(counts.joined(separator: ", "))")
            }
            for app in r.apps {
                let counts = RecipientStatus.allCases.compactMap { st in app.counts[st].map { "\(Output.number($0)) \(st.rawValue)" } }
                lines.append("app       \(app.app.isEmpty ? "(the job's app)" : app.app) \(app.environment): \(Output.number(app.total)) recipients: \(counts.joined(separator: ", "))")
            }
            lines.append("activity  last \(r.lastActivity ?? "-")")
            lines.append("reports   \(r.reportsDir)/")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func json(_ s: CampaignStatus) -> String {
        let runs: [JSONValue] = s.runs.map { r in
            let i = r.info
            let counts = StoredStatus.allCases.map { JSONValue.Member($0.rawValue, .number(String(r.counts[$0] ?? 0))) }
            return .object([
                .init("campaign", .string(i.campaign)), .init("run_id", .string(i.runId)),
                .init("started_at", .string(i.startedAt)), .init("finished_at", i.finishedAt.map(JSONValue.string) ?? .null),
                .init("ingest_complete", .bool(i.ingestComplete)), .init("rows", .number(String(i.rows))),
                .init("distinct", .number(String(r.distinct))), .init("duplicates", .number(String(i.duplicates))),
                .init("invalid", .number(String(r.invalid))), .init("audience_changed", .bool(i.audienceChanged)),
                .init("states", .object(counts)), .init("last_activity", r.lastActivity.map(JSONValue.string) ?? .null),
                .init("reports", .string(r.reportsDir)),
                .init("next_due_at", r.nextDue.map { .string(Self.iso($0)) } ?? .null),
                .init("experiment", r.experiment.isEmpty ? .null : Summary.experimentJSON(r.experiment)),
                .init("apps", r.apps.isEmpty ? .null : Summary.appsJSON(r.apps)),
            ])
        }
        return JSONValue.object([
            .init("state", .string(s.statePath)),
            .init("running", .bool(s.lockHolder != nil)),
            .init("lock_holder_pid", s.lockHolder.map { JSONValue.number(String($0)) } ?? .null),
            .init("control", s.control?.json ?? .null),
            .init("runs", .array(runs)),
            .init("events", .object(s.events.map {
                .init($0.sink, .object([.init("delivered", .number(String($0.delivered))), .init("waiting", .number(String($0.waiting)))]))
            })),
        ]).compactText + "\n"
    }
}
