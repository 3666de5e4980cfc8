import Dispatch
import Foundation
import HeraldCore
import HeraldDelivery
import HeraldPayload
import HeraldReports
import HeraldState
import Logging
import Synchronization

/// What a finished `herald run` tells its caller.
public struct RunReport: Sendable {
    public var status: ExitStatus
    public var message: String?
    public var summary: Summary?
    public var reportsDir: String
    public var statePath: String
}

/// Runs one campaign: ingest the audience into the state file, send every pending recipient,
/// write the reports. Each stage commits to SQLite before the next acts on it, so the same command
/// run again after any crash resumes where this one stopped.
public final class CampaignRunner {
    let spec: JobSpec
    let logger: Logger
    /// Set by SIGINT/SIGTERM: stop claiming, finish the batch in flight, record it, exit 4.
    let stopRequested = Atomic<Bool>(false)
    var signalSources: [DispatchSourceSignal] = []

    public init(spec: JobSpec, logger: Logger) {
        self.spec = spec
        self.logger = logger
    }

    public func requestStop() { stopRequested.store(true, ordering: .relaxed) }

    /// Installs SIGINT/SIGTERM handlers that ask for a graceful stop; a second signal exits at once
    /// (still resumable: the state file is always consistent).
    public func installSignalHandlers() {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in
                guard let self else { return }
                if self.stopRequested.load(ordering: .relaxed) { _exit(ExitStatus.incomplete.rawValue) }
                FileHandle.standardError.write(Data("herald: stopping after the requests in flight (signal again to exit now)\n".utf8))
                self.requestStop()
            }
            source.resume()
            signalSources.append(source)
        }
    }

    public func run() -> RunReport {
        let started = Date()
        var report = RunReport(status: .finished, message: nil, summary: nil, reportsDir: spec.reports.dir, statePath: spec.statePath)
        let lock: CampaignLock
        do { lock = try CampaignLock(statePath: spec.statePath) } catch {
            report.status = error.status; report.message = error.message
            return report
        }
        defer { withExtendedLifetime(lock) {} }

        let state: StateStore
        let renderer: PayloadRenderer
        do throws(RunFailure) {
            if spec.push.type == .background {
                throw RunFailure(.usage, "\(spec.jobFile): push.type background is not supported yet (the per-device silent-push budget, throttle.silent_per_device_per_hour, comes first)")
            }
            renderer = try Self.wrap(.usage) { () throws(PayloadTemplateError) in try PayloadRenderer(push: spec.push) }
            state = try Self.wrap(.usage) { () throws(StateError) in try StateStore(path: spec.statePath) }
        } catch {
            report.status = error.status; report.message = error.message
            return report
        }

        var sentThisRun = 0
        var outcome: (ExitStatus, String?) = (.finished, nil)
        var run: RunInfo?
        var alreadyFinished = false
        do throws(RunFailure) {
            let r = try Self.wrap(.usage) { () throws(StateError) in try state.openRun(campaign: spec.campaign) }
            run = r
            if r.finishedAt != nil {
                alreadyFinished = true
                throw RunFailure(.finished, "campaign \(spec.campaign) already finished (run \(r.runId) at \(r.finishedAt ?? "")): nothing sent; reports regenerated")
            }
            if r.resumed { logger.notice("resuming run \(r.runId) of campaign \(spec.campaign)") }
            if !r.ingestComplete {
                try ingest(into: state, run: r, renderer: renderer)
            }
            let target = try DeliveryTarget(spec: spec)
            defer { target.shutdown() }
            let sender = try Self.wrap(.usage) { () throws(DeliveryError) in
                try APNsSender(settings: target.settings, connections: spec.apns.connections, token: target.token)
            }
            let result = try send(from: state, sender: sender)
            sentThisRun = result.sent
            outcome = (result.status, result.message)
        } catch {
            outcome = (error.status, error.message)
        }

        // Reports are written from the state file whatever happened after the run was opened.
        guard let openedRun = run ?? (try? state.lastRun()) ?? nil else {
            report.status = outcome.0; report.message = outcome.1
            return report
        }
        if outcome.0 == .finished && !alreadyFinished {
            do {
                try state.finishRun(openedRun)
            } catch {
                outcome = (.incomplete, error.description)
            }
        }
        let elapsed = Date().timeIntervalSince(started)
        let extras = alreadyFinished ? SummaryExtras(exitCode: 0) : SummaryExtras(durationSeconds: elapsed, sendsPerSecond: elapsed > 0 ? Double(sentThisRun) / elapsed : nil,
                                   exitCode: Int(outcome.0.rawValue))
        do {
            // Read back once: counts and finished_at as committed, not as this process remembers them.
            let current = ((try? state.lastRun()) ?? nil) ?? openedRun
            report.summary = try ReportWriter(directory: spec.reports.dir)
                .write(state: state, campaign: spec.campaign, run: current, finishedAt: current.finishedAt, extra: extras)
        } catch {
            let message = "reports not written: \(error)"
            outcome = (outcome.0 == .finished ? .incomplete : outcome.0, [outcome.1, message].compactMap { $0 }.joined(separator: "; "))
        }
        report.status = outcome.0
        report.message = outcome.1
        return report
    }

    /// Runs a throwing step and turns its typed error into a RunFailure with the given exit status.
    static func wrap<T, E: Error>(_ status: ExitStatus, _ body: () throws(E) -> T) throws(RunFailure) -> T {
        do { return try body() } catch { throw RunFailure(status, "\(error)") }
    }
}
