import ArgumentParser
import Foundation
import HeraldCore
import HeraldJob
import HeraldPipeline
import HeraldReports

struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write a campaign's reports again from its state file, or merge the reports of a sharded campaign.",
        discussion: """
            `herald report <job>` rewrites every report of the job's last run (deliveries.csv, deliveries.ndjson, \
            unregistered.csv, rejected-tokens.csv, invalid.csv, summary.html, summary.json, and holdout.csv for an experiment) \
            from the state file. It only \
            reads the state file and takes no lock, so it is safe while the campaign runs: the reports then show the \
            campaign as far as it got.

            `herald report --merge <dir>... --out <dir>` combines the reports directories of a sharded campaign's \
            shards (`herald run --shard k/n`, reports in `<reports>-shard-k-of-n`) into one set: deliveries \
            concatenated in shard order, each invalid row once, summary figures summed (duration: the longest shard).
            """
    )

    @Argument(help: "The job file (YAML); with --merge, the shards' reports directories.")
    var paths: [String] = []

    @OptionGroup var files: CampaignFileOptions

    @Option(name: .customLong("run"), help: "The run to report (its run id or a prefix of it); default: the last run.")
    var runId: String?

    @Flag(help: "Merge the reports directories given as arguments (shards of one campaign) into --out.")
    var merge = false

    @Option(help: "With --merge: the directory to write the merged reports to.")
    var out: String?

    @Flag(help: "With --merge: gzip deliveries.csv and deliveries.ndjson, as `reports: {compress: true}` does.")
    var compress = false

    /// Bad usage exits 2 like every other herald problem before doing anything.
    func validate() throws {
        var problem: String?
        if merge {
            if paths.isEmpty { problem = "--merge needs the shards' reports directories" }
            else if out == nil { problem = "--merge needs --out <dir> for the merged reports" }
            else if !files.isEmpty || runId != nil { problem = "--state, --reports and --run do not apply to --merge" }
        } else {
            if paths.count != 1 { problem = "expected one job file (or --merge with reports directories)" }
            else if out != nil || compress { problem = "--out and --compress apply to --merge only" }
        }
        if let problem {
            Output.error(problem)
            throw ExitCode(ExitStatus.usage.rawValue)
        }
    }

    func run() throws {
        if merge { return try runMerge() }
        let written: CampaignReports.Written
        do {
            let spec = try JobLoader.load(path: paths[0], overrides: JobOverrides(statePath: files.state, reportsDir: files.reports))
            written = try CampaignReports.regenerate(spec: spec, runId: runId)
        } catch {
            throw Output.fail(error, during: .preparing)
        }
        let s = written.summary
        var lines = ["campaign  \(s.campaign)  (run \(s.runId))"]
        lines.append("delivery  " + RecipientStatus.allCases.map { "\(Output.number(s.count($0))) \($0.rawValue)" }.joined(separator: ", "))
        if written.runInProgress { lines.append("note      a run is in progress: these reports show it as far as it got") }
        lines.append("reports   \(written.directory)/  (\(written.files.joined(separator: ", ")))")
        FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    }

    func runMerge() throws {
        guard let out else { return }
        let summary: Summary
        do {
            summary = try ReportMerger.merge(shardDirs: paths, into: out, compress: compress)
        } catch {
            throw Output.fail(error, during: .preparing)
        }
        var lines = ["campaign  \(summary.campaign)  (\(paths.count) shard(s) merged)"]
        lines.append("delivery  " + RecipientStatus.allCases.map { "\(Output.number(summary.count($0))) \($0.rawValue)" }.joined(separator: ", "))
        lines.append("reports   \(out)/")
        FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    }
}
