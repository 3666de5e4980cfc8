import ArgumentParser
import Foundation
import HeraldAudience
import HeraldCore
import HeraldJob
import HeraldPipeline
import HeraldPayload

/// `herald preview`: what the first recipients (or one chosen row) would receive, headers and
/// payload, rendered by the same renderers `herald run` uses. Nothing is sent and no state is
/// written, so it is safe on a production job. It reads the audience only as far as it must.
struct PreviewCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preview",
        abstract: "Show the headers and payloads a job would send to its first recipients (or to one row).",
        discussion: """
            Renders with the job's templates, locales and header settings; prints each payload pretty-printed \
            with its size, and each unusable row with its file, line and reason. Sends nothing and writes nothing. \
            Exit 0 when the job is valid (even if rows have errors), 2 when the job, a template or an audience file is not.
            """
    )

    @Argument(help: "The job file (YAML).")
    var job: String

    @Option(name: [.customShort("n"), .customLong("count")], help: "How many recipients to show, from the start of the audience.")
    var count = 5

    @Option(help: "Show only the record that starts at this line (as in the reports: the CSV header is line 1).")
    var row: Int?

    @Option(help: "With --row: the audience file, as the job names it (default: the first).")
    var file: String?

    /// Bad usage exits 2 like every other herald problem before sending.
    func validate() throws {
        var problem: String?
        if count < 1 { problem = "-n must be at least 1" }
        if let row, row < 1 { problem = "--row must be a line number (1 or more)" }
        if file != nil && row == nil { problem = "--file goes with --row" }
        if let problem {
            Output.error(problem)
            throw ExitCode(2)
        }
    }

    func run() throws {
        do throws(PreviewFailure) {
            try preview()
        } catch {
            Output.error(error.message)
            throw ExitCode(2)
        }
    }

    private func preview() throws(PreviewFailure) {
        let spec: JobSpec
        let payloads: PayloadRenderer
        let headers: HeaderRenderer
        var experiment: ExperimentRenderers?
        do {
            spec = try JobLoader.load(path: job)
            spec.warnings.forEach(Output.warning)
        } catch {
            throw PreviewFailure("\(error)")
        }
        do {
            payloads = try PayloadRenderer(push: spec.push, section: spec.templateSection)
            headers = try HeaderRenderer(job: spec)
            if let e = spec.experiment {
                experiment = try ExperimentRenderers(job: spec, experiment: e, campaign: CampaignName(spec.campaign).resolved(at: Date()))
            }
        } catch let e as PayloadTemplateError {
            // A located problem already names its file and line.
            if case .located = e { throw PreviewFailure("\(e)") }
            throw PreviewFailure("\(job): \(e)")
        } catch {
            throw PreviewFailure("\(job): \(error)")
        }

        var files = spec.audience.files
        if let file {
            guard let chosen = files.first(where: { $0.name == file || ($0.name as NSString).lastPathComponent == file }) else {
                throw PreviewFailure("--file \(file) is not one of the job's audience files: \(files.map(\.name).joined(separator: ", "))")
            }
            files = [chosen]
        } else if row != nil {
            files = Array(files.prefix(1))
        }

        let printer = PreviewPrinter(spec: spec, payloads: payloads, headers: headers, experiment: experiment, now: Int(Date().timeIntervalSince1970))
        printer.printJob()
        var shown = 0
        var rowsRead = 0
        if spec.isBroadcast && spec.audience.files.isEmpty {
            // push.broadcast.channels: the job's own lines are the rows.
            for record in ListedChannels.records(of: spec) where row.map({ $0 == record.location.line }) ?? true {
                rowsRead += 1
                printer.print(.record(record))
                shown += 1
                if row != nil || shown >= count { break }
            }
        }
        reading: for file in files {
            let reader: AudienceFileReader
            do { reader = try AudienceFileReader(file: file, spec: spec.audience) } catch { throw PreviewFailure("\(error)") }
            while true {
                let event: AudienceEvent?
                do { event = try reader.next() } catch { throw PreviewFailure("\(error)") }
                guard let event else { break }
                rowsRead += 1
                let line: Int
                switch event {
                case .record(let r): line = r.location.line
                case .invalid(let r): line = r.location.line
                }
                if let row {
                    if line < row { continue }
                    if line > row { break reading }
                }
                printer.print(event)
                if case .record = event { shown += 1 }
                if row != nil || shown >= count { break reading }
            }
        }
        if let row, !printer.printedAny {
            throw PreviewFailure("no audience record starts at line \(row) of \(files.first?.name ?? "the audience")")
        }
        printer.printFooter(recipients: shown, rowsRead: rowsRead)
    }
}

struct PreviewFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
