import ArgumentParser
import Foundation
import HeraldCore
import HeraldJob
import HeraldPipeline
import Logging

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run (or resume) the campaign a job file describes.",
        discussion: """
            Running the same command again after a crash or a signal resumes the campaign: nobody is skipped, \
            nobody is sent twice. Running it after the campaign finished sends nothing (and rewrites missing \
            reports), unless --new-run is given or the campaign's name has a {date}, {week} or {month} that \
            moved on.
            """
    )

    @Argument(help: "The job file (YAML). Relative paths inside it resolve against its own directory.")
    var job: String

    @Option(help: "State file to use instead of the job's `state`.")
    var state: String?

    @Option(help: "Reports directory to use instead of the job's `reports`.")
    var reports: String?

    @Option(help: "Endpoint instead of the job's: production, sandbox, simulator or https://host:port.")
    var endpoint: String?

    @Option(name: .customLong("ca-file"), help: "PEM CA bundle trusted for the endpoint instead of the system store.")
    var caFile: String?

    @Flag(name: .customLong("new-run"), help: "Start a new run of a campaign whose last run finished (send it again). An unfinished last run is resumed first.")
    var newRun = false

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "notice"

    func run() throws {
        var logger = Logger(label: "herald")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .notice
        let spec: JobSpec
        do {
            spec = try JobLoader.load(path: job, overrides: JobOverrides(statePath: state, reportsDir: reports, endpoint: endpoint, caFile: caFile))
        } catch {
            Output.error("\(error)")
            throw ExitCode(ExitStatus.usage.rawValue)
        }
        let runner = CampaignRunner(spec: spec, logger: logger, newRun: newRun)
        runner.installSignalHandlers()
        let report = runner.run()
        Output.print(report, spec: spec)
        if report.status != .finished { throw ExitCode(report.status.rawValue) }
    }
}
