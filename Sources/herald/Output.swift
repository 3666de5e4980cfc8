import ArgumentParser
import Foundation
import HeraldCore
import HeraldPipeline
import HeraldReports

/// The one-screen summary `herald run` prints, and error lines on stderr.
enum Output {
    static func error(_ message: String) {
        FileHandle.standardError.write(Data("herald: error: \(message)\n".utf8))
    }

    /// Something that still works but should be changed (an obsolete job key: `JobSpec.warnings`).
    static func warning(_ message: String) {
        FileHandle.standardError.write(Data("herald: warning: \(message)\n".utf8))
    }

    /// Prints a command's failure and gives its exit code, both from `RunFailure(_:during:)`,
    /// the one mapping of failures to exit codes.
    static func fail(_ error: any Error, during stage: RunStage, line: (String) -> Void = Output.error) -> ExitCode {
        let failure = RunFailure(error, during: stage)
        line(failure.message)
        return ExitCode(failure.status.rawValue)
    }

    static func number(_ n: Int) -> String { DecimalDigits.grouped(n) }

    static func print(_ report: RunReport, spec: JobSpec, errorLine: (String) -> Void = { Output.error($0) }) {
        let lines = resultLines(report)
        if report.summary != nil {
            FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        }
        // Errors always go to stderr, so cron mail and CI logs show them whatever stdout does.
        if report.status != .finished { errorLine(report.message ?? report.status.meaning) }
    }

    /// What `print` writes to stdout: the summary's lines (when there is one) and the result.
    static func resultLines(_ report: RunReport) -> [String] {
        var lines: [String] = []
        if let s = report.summary {
            lines.append("campaign  \(s.campaign)  (run \(s.runId))")
            lines.append("audience  \(number(s.rows)) rows: \(number(s.distinct)) \(s.broadcastChannels == nil ? "recipients" : "channels"), \(number(s.duplicates)) duplicate rows, \(number(s.invalid)) invalid rows")
            // An experiment's statuses only where there is one: a plain campaign's line stays as it was.
            let shown = RecipientStatus.allCases.filter { s.experiment != nil || !$0.isExperimentOnly || s.count($0) > 0 }
            lines.append("delivery  " + shown.map { "\(number(s.count($0))) \($0.rawValue)" }.joined(separator: ", "))
            if !s.byReason.isEmpty {
                lines.append("reasons   " + s.byReason.sorted { $0.value > $1.value }.prefix(6).map { "\($0.key) \(number($0.value))" }.joined(separator: ", "))
            }
            if !s.invalidByReason.isEmpty {
                lines.append("invalid   " + s.invalidByReason.sorted { $0.value > $1.value }.map { "\($0.key) \(number($0.value))" }.joined(separator: ", "))
            }
            // The rate is the campaign's, over every invocation: said only when this one sent, or a
            // resumed run that sent nothing would show the earlier runs' rate as its own.
            if let r = s.sendsPerSecond, report.sentNow > 0 {
                lines.append(String(format: "took      %.2f s (%.0f sends/s)", s.durationSeconds, r))
            } else if s.durationSeconds > 0 {
                lines.append(String(format: "took      %.2f s over every run of the campaign; nothing sent by this one", s.durationSeconds))
            }
            if let events = s.extra.events, !events.isEmpty {
                lines.append("events    " + events.map { e in
                    var text = "\(e.sink) \(number(e.delivered)) delivered, \(number(e.waiting)) waiting"
                    if let error = e.error { text += " (stopped: \(error))" } else if e.failedAttempts > 0 { text += " (\(number(e.failedAttempts)) failed tries)" }
                    return text
                }.joined(separator: "; "))
            }
            lines.append("reports   \(report.reportsDir)/  (summary.html, deliveries.csv + .ndjson, unregistered.csv, rejected-tokens.csv, invalid.csv, summary.json\(report.summary?.experiment == nil ? "" : ", holdout.csv"))")
            lines.append("state     \(report.statePath)")
        }
        // docs/events.md: the exit status does not depend on events, so the result says what still waits.
        let waiting = (report.summary?.extra.events ?? []).filter { $0.waiting > 0 }
            .map { "\(number($0.waiting)) for \($0.sink)" }.joined(separator: ", ")
        let events = waiting.isEmpty ? "" : "; delivery events still waiting in the outbox: \(waiting) (the next herald run of the job delivers them first)"
        if report.status == .finished {
            lines.append("result    " + (report.message ?? "finished: every recipient reached a final state") + events)
        } else {
            lines.append("result    exit \(report.status.rawValue) (\(report.status.meaning))" + events)
        }
        return lines
    }
}
