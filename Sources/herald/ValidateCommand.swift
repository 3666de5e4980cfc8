import ArgumentParser
import Foundation
import HeraldCore
import HeraldJob
import HeraldPipeline

struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Read the whole audience of a job without sending: rows, valid, duplicates, invalid rows by reason.",
        discussion: """
            Every row is parsed, its token normalized and its payload rendered as `herald run` would, \
            so the counts are the ones the run will find. Nothing is sent and no state or report is written.

            Exit 0: invalid rows within audience.max_invalid_rows; 5: over it; 2: bad job or audience file.
            """
    )

    @Argument(help: "The job file (YAML). Relative paths inside it resolve against its own directory.")
    var job: String

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    /// For the reading benchmark (Benchmarks/audience_bench.py): inflate, parse and normalize
    /// tokens only, in the binary operators run, so the figure is the shipped code's.
    @Flag(name: .customLong("parse-only"), help: .hidden)
    var parseOnly = false

    func run() throws {
        let result: AudienceScanResult
        do {
            let spec = try JobLoader.load(path: job)
            spec.warnings.forEach(Output.warning)
            if let problem = spec.schedule?.pastDateProblem(at: Date()) { throw RunFailure(.usage, "\(spec.jobFile): \(problem)") }
            result = try AudienceScan(spec: spec, depth: parseOnly ? .parseOnly : .full).run()
        } catch {
            throw Output.fail(error, during: .preparing)
        }
        let text = json ? ValidateReport.json(result) : ValidateReport.text(result)
        FileHandle.standardOutput.write(Data(text.utf8))
        if result.depth == .full && result.isOverInvalidLimit {
            Output.error(result.invalidLimitMessage)
            throw ExitCode(ExitStatus.tooManyInvalid.rawValue)
        }
    }
}

/// What `herald validate` prints.
enum ValidateReport {
    static func text(_ r: AudienceScanResult) -> String {
        let n = Output.number
        var lines: [String] = []
        if r.depth == .parseOnly {
            lines.append("audience  \(n(r.rows)) rows parsed: \(n(r.valid)) with a valid token, \(n(r.invalid)) invalid")
        } else {
            lines.append("audience  \(n(r.rows)) rows: \(n(r.valid)) valid (\(n(r.distinct)) distinct \(r.broadcast ? "channels" : "tokens"), \(n(r.duplicates)) duplicate rows), \(n(r.invalid)) invalid")
        }
        if !r.invalidByReason.isEmpty {
            lines.append("invalid   " + sortedReasons(r).map { "\($0.key) \(n($0.value))" }.joined(separator: ", "))
        }
        for f in r.files {
            lines.append("file      \(f.name): \(n(f.rows)) rows, \(n(f.bytes)) bytes, \(f.compressed ? "gzip" : "plain") \(f.format.rawValue)")
        }
        for app in r.apps {
            let name = app.name.isEmpty ? app.topic : "\(app.name) (\(app.topic))"
            let environments = APNsEnvironment.allCases.compactMap { e in
                app.rows[e].map { "\(n($0)) \(e.name) (\(app.endpoints[e] ?? ""))" }
            }
            lines.append("app       \(name): \(n(app.distinct)) distinct \(r.broadcast ? "channels" : "tokens")" + (environments.isEmpty ? "" : "; rows: " + environments.joined(separator: ", ")))
        }
        if !r.firstInvalid.isEmpty {
            lines.append(r.invalid > 5 ? "first 5 of \(n(r.invalid)) invalid rows:" : "invalid rows:")
            for row in r.firstInvalid.prefix(5) {
                let field = row.field.isEmpty ? "" : " (\(row.field))"
                lines.append("  \(row.location): \(row.reason.rawValue)\(field): \(row.detail)")
            }
        }
        lines.append(String(format: "took      %.2f s", r.seconds))
        if r.depth == .full {
            lines.append("result    " + (r.isOverInvalidLimit ? "exit 5 (\(r.invalidLimitMessage))" : "ok: \(r.invalidLimitMessage)"))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// One object; `invalid_by_reason` lists only the reasons seen, as summary.json does.
    static func json(_ r: AudienceScanResult) -> String {
        func number(_ i: Int) -> JSONValue { .number(String(i)) }
        let files: [JSONValue] = r.files.map { f in
            .object([
                .init("file", .string(f.name)), .init("rows", number(f.rows)), .init("valid", number(f.valid)),
                .init("invalid", number(f.invalid)), .init("bytes", number(f.bytes)),
                .init("compression", .string(f.compression)), .init("format", .string(f.format.rawValue)),
            ])
        }
        let examples: [JSONValue] = r.firstInvalid.map { row in
            .object([
                .init("file", .string(row.location.file)), .init("line", number(row.location.line)),
                .init("reason", .string(row.reason.rawValue)), .init("field", .string(row.field)), .init("detail", .string(row.detail)),
            ])
        }
        var members: [JSONValue.Member] = [
            .init("rows", number(r.rows)), .init("valid", number(r.valid)),
            .init("distinct", number(r.distinct)), .init("duplicates", number(r.duplicates)),
            .init("invalid", number(r.invalid)),
            .init("invalid_by_reason", .object(sortedReasons(r).map { .init($0.key, number($0.value)) })),
            .init("files", .array(files)),
            .init("first_invalid", .array(examples)),
        ]
        if !r.apps.isEmpty {
            members.append(.init("apps", .array(r.apps.map { app in
                .object([.init("app", .string(app.name)), .init("topic", .string(app.topic)), .init("distinct", number(app.distinct))]
                        + APNsEnvironment.allCases.map { .init($0.name, number(app.rows[$0] ?? 0)) })
            })))
        }
        members += [
            .init("seconds", .number(String(format: "%.3f", r.seconds))),
        ]
        if r.depth == .full {
            members += [
                .init("max_invalid_rows", .string(r.limit.description)),
                .init("allowed_invalid", number(r.allowedInvalid)),
                .init("over_limit", .bool(r.isOverInvalidLimit)),
            ]
        } else {
            members.append(.init("parse_only", .bool(true)))
        }
        return JSONValue.object(members).compactText + "\n"
    }

    /// Most frequent first; ties by name, so the output is the same every time.
    private static func sortedReasons(_ r: AudienceScanResult) -> [(key: String, value: Int)] {
        r.invalidByReason.map { (key: $0.key.rawValue, value: $0.value) }
            .sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
    }
}
