import ArgumentParser
import Foundation
import HeraldCore
import HeraldJob
import HeraldOperations
import HeraldPipeline
import HeraldState
import Logging

/// Which campaign a control command holds: the job's state file (and its shards'), or state files given directly.
struct ControlTarget: ParsableArguments {
    @Argument(help: "The job file (YAML). Its state file, and every shard's (-shard-k-of-n), are held.")
    var job: String?

    @Option(help: "A state file, or a directory of them (a sharded campaign's), instead of the job's.")
    var state: String?

    @Option(help: ArgumentHelp("Only this shard's state file (as `herald run --shard k/n` keeps it).", valueName: "k/n"))
    var shard: String?

    func validate() throws {
        if job == nil && state == nil { throw ValidationError("give the job file, or --state with a state file or a directory of them") }
        if let shard { do { _ = try Shard(text: shard) } catch { throw ValidationError(error.description) } }
        if shard != nil && job == nil { throw ValidationError("--shard needs the job file") }
    }

    /// The job, when given, with the state file it names.
    func loadJob() throws -> JobSpec? {
        guard let job else { return nil }
        return try JobLoader.load(path: job, overrides: JobOverrides(statePath: state))
    }

    /// Every state file the command applies to, with the job (shard applied) that owns it when known.
    /// A campaign that never ran gets its (unsharded, or the given shard's) state file, so that
    /// its first run already finds the hold.
    func stateFiles(job spec: JobSpec?) throws -> [(path: String, spec: JobSpec?)] {
        if let spec {
            if let shard { let s = try Shard(text: shard).apply(to: spec); return [(s.statePath, s)] }
            var found: [(String, JobSpec?)] = []
            if FileManager.default.fileExists(atPath: spec.statePath) { found.append((spec.statePath, spec)) }
            for other in Shard.otherLayouts(of: spec.statePath, than: nil) {
                found.append((other, Self.shard(of: other, unsharded: spec.statePath).map { $0.apply(to: spec) }))
            }
            return found.isEmpty ? [(spec.statePath, spec)] : found
        }
        guard let state else { return [] }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: state, isDirectory: &isDirectory) else {
            throw StateError(path: state, message: "no such state file or directory")
        }
        guard isDirectory.boolValue else { return [(state, nil)] }
        let names = try FileManager.default.contentsOfDirectory(atPath: state).sorted()
            .filter { $0.hasSuffix(".sqlite") && $0 != SharedStore.fileName }
        guard !names.isEmpty else { throw StateError(path: state, message: "no state files (*.sqlite) in this directory") }
        return names.map { ((state as NSString).appendingPathComponent($0), nil) }
    }

    /// The shard a `-shard-k-of-n` state file belongs to.
    static func shard(of path: String, unsharded: String) -> Shard? {
        let name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        let base = ((unsharded as NSString).lastPathComponent as NSString).deletingPathExtension
        guard name.hasPrefix(base + "-shard-") else { return nil }
        let kn = name.dropFirst(base.count + "-shard-".count).split(separator: "-")
        guard kn.count == 3, kn[1] == "of" else { return nil }
        return try? Shard(text: "\(kn[0])/\(kn[2])")
    }

    /// `user@host` of whoever runs the command.
    static var operatorName: String {
        let env = ProcessInfo.processInfo.environment
        var user = env["USER"] ?? env["LOGNAME"] ?? ""
        if let pw = getpwuid(geteuid()), let name = pw.pointee.pw_name { user = String(cString: name) }
        var host = [CChar](repeating: 0, count: 256)
        let hostName = gethostname(&host, host.count) == 0
            ? String(decoding: host.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown-host"
        return "\(user.isEmpty ? "uid\(geteuid())" : user)@\(hostName)"
    }

    /// What happens next for a held state file: whether a run holds its lock right now.
    static func running(_ path: String) -> String? {
        CampaignLock.holder(statePath: path).map { "a run (pid \($0)) is in progress and stops within a second" }
    }
}

struct PauseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pause a campaign: its running run stops within a second, and later runs send nothing until `herald resume`.",
        discussion: """
            The pause is kept in the campaign's state file (every shard's), so it holds whoever starts the next run, \
            on any host. A run in progress stops after the requests in flight (their answers are recorded) and exits 6; \
            later runs exit 6 at once, without reading the audience or connecting to APNs. `herald status` shows who \
            paused it, when and why.
            """
    )

    @OptionGroup var target: ControlTarget

    @Option(help: "Why, shown by herald status, the run's message and the reports.")
    var reason: String = ""

    func run() throws {
        do {
            let spec = try target.loadJob()
            for (path, _) in try target.stateFiles(job: spec) {
                let hold = try StateStore(path: path).setControl(.paused, by: ControlTarget.operatorName, reason: reason)
                print("\(path): \(hold.description); " + (ControlTarget.running(path) ?? "no run in progress") + ". `herald resume` continues it")
            }
        } catch {
            throw Output.fail(error, during: .preparing)
        }
    }
}

struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Clear a campaign's pause: its next run continues where it stopped.",
        discussion: "A cancelled campaign cannot be resumed (exit 2): give the job a new campaign name to send again."
    )

    @OptionGroup var target: ControlTarget

    func run() throws {
        do {
            let spec = try target.loadJob()
            for (path, _) in try target.stateFiles(job: spec) where FileManager.default.fileExists(atPath: path) {
                if let cleared = try StateStore(path: path).resume(by: ControlTarget.operatorName) {
                    print("\(path): resumed (it was \(cleared.description)); the next `herald run` continues where it stopped")
                } else {
                    print("\(path): not paused; nothing to resume")
                }
            }
        } catch {
            throw Output.fail(error, during: .preparing)
        }
    }
}

struct CancelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel a campaign: nothing more is sent, ever, and every recipient not yet sent becomes `cancelled`.",
        discussion: """
            As `herald pause`, and for good: a run in progress stops within a second and records every recipient not \
            sent as `cancelled` (with the reason), so the reports, `herald status` and the delivery events say so. \
            With the job file and no run in progress, this command records them itself and rewrites the reports; with \
            only --state, the next `herald run` of the job does (it sends nothing). A cancelled campaign cannot be \
            resumed: give the job a new campaign name to send again.
            """
    )

    @OptionGroup var target: ControlTarget

    @Option(help: "Why, shown by herald status, the reports (the recipients' reason) and the delivery events.")
    var reason: String = ""

    func run() throws {
        var logger = Logger(label: "herald")
        logger.logLevel = .warning
        var worst: Int32 = 0
        do {
            let spec = try target.loadJob()
            for (path, owner) in try target.stateFiles(job: spec) {
                let hold = try StateStore(path: path).setControl(.cancelled, by: ControlTarget.operatorName, reason: reason)
                if let running = ControlTarget.running(path) {
                    print("\(path): \(hold.description); \(running) and records the rest as cancelled")
                } else if let owner {
                    // No run holds the campaign: record the cancellation now, as its next run would.
                    let runner = CampaignRunner(spec: owner, logger: logger)
                    runner.operations = RunOperations(shard: ControlTarget.shard(of: path, unsharded: spec?.statePath ?? path))
                    let report = runner.run()
                    let words = report.summary.map { "\(Output.number($0.count(.cancelled))) cancelled, \(Output.number($0.count(.sent))) sent; reports in \(report.reportsDir)/" }
                    if report.status == .stopped || report.status == .finished {
                        print("\(path): \(hold.description); " + (words ?? "the campaign never ran: its runs will send nothing"))
                    } else {
                        Output.error("\(path): \(hold.description), but recording it failed: \(report.message ?? report.status.meaning)")
                        worst = max(worst, report.status.rawValue)
                    }
                } else {
                    print("\(path): \(hold.description); the next `herald run` of its job records the recipients not sent as cancelled (it sends nothing)")
                }
            }
        } catch {
            throw Output.fail(error, during: .preparing)
        }
        if worst != 0 { throw ExitCode(worst) }
    }
}
