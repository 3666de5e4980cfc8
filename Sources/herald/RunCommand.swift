import ArgumentParser
import Foundation
import HeraldCore
import HeraldJob
import HeraldOperations
import HeraldPipeline
import HeraldReports
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

            Exit codes: 0 finished; 2 usage, configuration or audience error before sending; 3 aborted by a fatal \
            APNs error (fix the configuration, rerun); 4 incomplete, rerun to resume (signal, retries exhausted, \
            deadline, a full disk); 5 too many invalid rows; 6 paused or cancelled by an operator (herald pause, \
            herald cancel; a paused campaign continues after herald resume); 75 another run holds the campaign's lock.
            """
    )

    @Argument(help: "The job file (YAML). Relative paths inside it resolve against its own directory.")
    var job: String

    @OptionGroup var files: CampaignFileOptions

    @Option(help: "Endpoint instead of the job's: production, sandbox, simulator or https://host:port.")
    var endpoint: String?

    @Option(name: .customLong("ca-file"), help: "PEM CA bundle trusted for the endpoint instead of the system store.")
    var caFile: String?

    @Option(help: ArgumentHelp("An experiment's winning variant: sent to every recipient outside its test (experiment.winner).", valueName: "name"))
    var winner: String?

    @Flag(name: .customLong("new-run"), help: "Start a new run of a campaign whose last run finished (send it again). An unfinished last run is resumed first.")
    var newRun = false

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "notice"

    @Option(name: .customLong("log-format"), help: ArgumentHelp("text (for people) or json (one object per line, for log collectors).", valueName: "format"))
    var logFormat: String = "text"

    @Flag(name: .customLong("log-sensitive"), help: "Show device tokens in full in logs (they are cut to their first 8 hex digits otherwise). Keys and JWTs are never logged.")
    var logSensitive = false

    @Option(help: ArgumentHelp("auto: a line redrawn in place on a terminal, a log line every --progress-interval otherwise; always: the redrawn line even without a terminal; never.", valueName: "mode"))
    var progress: String = "auto"

    @Option(name: .customLong("progress-interval"), help: ArgumentHelp("How often a progress log line is written when stderr is not a terminal (30s, 5m).", valueName: "duration"))
    var progressInterval: String = "60s"

    @Option(name: .customLong("metrics-file"), help: ArgumentHelp("Write Prometheus textfile-collector metrics here (atomically: temp file + rename), periodically and at the end.", valueName: "path.prom"))
    var metricsFile: String?

    @Option(name: .customLong("metrics-interval"), help: ArgumentHelp("How often the metrics file is rewritten during the run.", valueName: "duration"))
    var metricsInterval: String = "15s"

    @Option(help: ArgumentHelp("""
        Send only shard k of n (k 0-based): the recipients whose token hashes to k, with their own state file, lock \
        and reports directory (suffix -shard-k-of-n). Default: JOB_COMPLETION_INDEX and HERALD_SHARD_COUNT when set \
        (a Kubernetes Indexed Job).
        """, valueName: "k/n"))
    var shard: String?

    @Option(name: .customLong("ping-url"), help: ArgumentHelp("""
        A cron monitor's check URL (healthchecks.io's convention), instead of the job's ops.ping_url: <url>/start when \
        the run holds the campaign's lock, <url> when it exits 0, <url>/log when it exits 4 or 75, <url>/<exit code> \
        otherwise, with the result as the body.
        """, valueName: "url"))
    var pingURL: String?

    @Option(help: ArgumentHelp("""
        A Prometheus Pushgateway (http://host:9091), instead of the job's ops.pushgateway: the metrics are pushed \
        there every --metrics-interval and at the end, under job herald and the campaign (and shard).
        """, valueName: "url"))
    var pushgateway: String?

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(logLevel)\"")
        }
        guard HeraldLogHandler.Format(rawValue: logFormat) != nil else { throw ValidationError("--log-format must be text or json, not \"\(logFormat)\"") }
        guard ProgressTicker.Mode(rawValue: progress) != nil else { throw ValidationError("--progress must be auto, always or never, not \"\(progress)\"") }
        for (name, value) in [("--progress-interval", progressInterval), ("--metrics-interval", metricsInterval)] {
            guard let seconds = DurationText.seconds(value), seconds >= 1 else {
                throw ValidationError("\(name) must be a duration of at least 1s (30s, 5m), not \"\(value)\"")
            }
        }
        if let shard { do { _ = try Shard(text: shard) } catch { throw ValidationError(error.description) } }
        if let pingURL, !OpsSpec.isHTTPURL(pingURL) {
            throw ValidationError("--ping-url must be an http:// or https:// URL with a host, such as https://hc-ping.com/<uuid>")
        }
        if let pushgateway, !OpsSpec.isHTTPURL(pushgateway) {
            throw ValidationError("--pushgateway must be an http:// or https:// URL with a host, such as http://pushgateway:9091, not \"\(SecretRedaction.withoutCredentials(pushgateway))\"")
        }
    }

    func run() throws {
        let format = HeraldLogHandler.Format(rawValue: logFormat) ?? .text
        let level = Logger.Level(rawValue: logLevel) ?? .notice
        let redaction = LogRedaction(showTokens: logSensitive)
        LoggingSystem.bootstrap { label in
            var handler = HeraldLogHandler(label: label, format: format, redaction: redaction)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "herald")
        logger.logLevel = level
        // In JSON mode every stderr line is a JSON object, errors included.
        let errorLine: (String) -> Void = format == .json ? { [logger] in logger.error("\($0)") } : { Output.error($0) }

        let spec: JobSpec
        let shard: Shard?
        do {
            shard = try Shard.resolve(option: self.shard, environment: ProcessInfo.processInfo.environment)
            let loaded = try JobLoader.load(path: job, overrides: JobOverrides(statePath: files.state, reportsDir: files.reports, endpoint: endpoint, caFile: caFile, winner: winner))
            spec = shard.map { $0.apply(to: loaded) } ?? loaded
            let others = Shard.otherLayouts(of: loaded.statePath, than: shard)
            if !others.isEmpty && !FileManager.default.fileExists(atPath: spec.statePath) {
                throw ShardError.invalid("\(others.joined(separator: ", ")): this campaign has state under another shard layout. "
                    + "Each shard count splits tokens differently, so \(shard.map { "--shard k/\($0.count)" } ?? "a run without --shard") would send "
                    + "again what those runs sent. Run it as it was started, or move those state files away to start over")
            }
        } catch {
            let exit = Output.fail(error, during: .preparing, line: errorLine)
            // Only the command line's URL is known here: the job that names one did not load.
            pingURL.map { CronPing(url: $0) }?.ended(exitCode: exit.rawValue, body: RunFailure(error, during: .preparing).message, logger: logger)
            throw exit
        }
        // Obsolete keys and variables still work, with a word on what replaced them (a log line, so
        // JSON logs stay one object per line).
        for warning in spec.warnings + JobOverrides.obsoleteVariableWarnings(ProcessInfo.processInfo.environment) {
            logger.warning("\(warning)")
        }
        let ping = (pingURL ?? spec.ops.pingURL).map { CronPing(url: $0, timeoutSeconds: Double(spec.ops.pingTimeout)) }
        logger[metadataKey: "campaign"] = .string(spec.campaign)
        if let shard { logger[metadataKey: "shard"] = .string(shard.description) }

        let progress = RunProgress()
        let systemd = SystemdNotifier()
        let metrics = metricsFile.map { MetricsFile(path: $0, campaign: spec.campaign, shard: shard) }
        let gateway = (pushgateway ?? spec.ops.pushgateway).map { Pushgateway(url: $0, campaign: spec.campaign, shard: shard) }
        let ticker = ProgressTicker(progress: progress, mode: ProgressTicker.Mode(rawValue: self.progress) ?? .auto,
                                    logInterval: TimeInterval(DurationText.seconds(progressInterval) ?? 60), logger: logger,
                                    metrics: metrics, metricsInterval: TimeInterval(DurationText.seconds(metricsInterval) ?? 15),
                                    structuredLogs: format == .json, systemd: systemd, pushgateway: gateway)
        let runner = CampaignRunner(spec: spec, logger: logger, newRun: newRun)
        runner.operations = RunOperations(shard: shard, progress: progress, systemd: systemd, ping: ping.map { ($0, logger) })
        runner.installSignalHandlers()
        ticker.start()
        let report = runner.run()
        // The last word to systemd: READY=1 too if sending never started (nothing was due), so a
        // Type=notify unit is never left waiting for it.
        systemd?.ready(status: Output.resultLines(report).last?.dropFirst(10).description ?? "done")
        progress.finish()
        ticker.stop()
        let final = MetricsFile.Final(summary: report.summary, exitCode: report.status.rawValue, counters: report.summary?.figures.counters)
        if let metrics {
            do { try metrics.write(progress.snapshot, final: final) } catch { logger.warning("\(error)") }
        }
        if let gateway, let error = gateway.push(progress.snapshot, final: final) { logger.warning("\(error)") }
        if format == .json { logger.notice("run ended", metadata: Self.resultFields(report)) }
        Output.print(report, spec: spec, errorLine: errorLine)
        if let ping {
            var body = Output.resultLines(report)
            if report.status != .finished, let message = report.message { body.append("error     \(message)") }
            ping.ended(exitCode: report.status.rawValue, body: body.joined(separator: "\n"), logger: logger)
        }
        if report.status != .finished { throw ExitCode(report.status.rawValue) }
    }

    /// The result as log fields, so a collector sees the outcome without parsing stdout.
    static func resultFields(_ report: RunReport) -> Logger.Metadata {
        var fields: Logger.Metadata = ["exit_code": .string(String(report.status.rawValue)), "reports": .string(report.reportsDir)]
        if let s = report.summary {
            fields["run_id"] = .string(s.runId)
            for status in RecipientStatus.allCases { fields[status.rawValue] = .string(String(s.count(status))) }
            fields["invalid"] = .string(String(s.invalid))
        }
        return fields
    }
}
