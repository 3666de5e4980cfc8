import Dispatch
import Foundation
import Logging

/// The thread that shows progress and writes the metrics file periodically while `herald run`
/// works. It only reads `RunProgress` snapshots, so the runner never waits on a terminal or a disk.
///
/// `--progress auto` (the default): a line redrawn in place when stderr is a terminal; otherwise a
/// log line every `--progress-interval` (cron mail and collectors get a line now and then, not a
/// stream of carriage returns). `always`: the redrawn line even when stderr is not a terminal
/// (`docker run` without `-t`, CI consoles that render `\r`). `never`: nothing.
public final class ProgressTicker: @unchecked Sendable {
    // @unchecked: the mutable state below is touched by the ticker thread only; start/stop by the caller.
    public enum Mode: String, Sendable, CaseIterable { case auto, always, never }
    enum Display { case line, log, none }

    let progress: RunProgress
    let display: Display
    let logInterval: TimeInterval
    let console: Console
    let logger: Logger
    let metrics: MetricsFile?
    let metricsInterval: TimeInterval
    /// Progress log lines carry their figures as metadata (for `--log-format json`); text lines
    /// already say them in the message.
    let structuredLogs: Bool
    /// Gets the progress line as its STATUS every `systemdInterval` seconds.
    let systemd: SystemdNotifier?
    static let systemdInterval: TimeInterval = 2
    /// Gets the metrics every `metricsInterval`, like the metrics file.
    let pushgateway: Pushgateway?
    private var warnedPush = false
    private let stopSignal = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private var running = false
    private var warnedMetrics = false

    public init(progress: RunProgress, mode: Mode, logInterval: TimeInterval, console: Console = .standardError,
                logger: Logger, metrics: MetricsFile?, metricsInterval: TimeInterval = 15, structuredLogs: Bool = true,
                systemd: SystemdNotifier? = nil, pushgateway: Pushgateway? = nil) {
        self.progress = progress
        switch mode {
        case .never: display = .none
        case .always: display = .line
        case .auto: display = console.isTerminal ? .line : .log
        }
        self.logInterval = logInterval
        self.console = console
        self.logger = logger
        self.metrics = metrics
        self.metricsInterval = metricsInterval
        self.structuredLogs = structuredLogs
        self.systemd = systemd
        self.pushgateway = pushgateway
    }

    public func start() {
        guard display != .none || metrics != nil || systemd != nil || pushgateway != nil else { return }
        running = true
        let thread = Thread { [self] in loop() }
        thread.name = "herald-progress"
        thread.start()
    }

    /// Stops the thread and erases the progress line (the summary follows on stdout).
    public func stop() {
        guard running else { return }
        running = false
        stopSignal.signal()
        finished.wait()
        if display == .line { console.setStatus(nil) }
    }

    private func loop() {
        let tick: TimeInterval = display == .line ? 0.25 : 0.5
        var nextLog = Date().addingTimeInterval(logInterval)
        var nextMetrics = Date().addingTimeInterval(min(metricsInterval, 1))
        var nextStatus = Date().addingTimeInterval(Self.systemdInterval)
        var lastPhase = RunProgress.Phase.starting
        while stopSignal.wait(timeout: .now() + tick) == .timedOut {
            let s = progress.snapshot
            let now = Date()
            switch display {
            case .line:
                console.setStatus(ProgressText.line(s, now: now, width: console.columns))
            case .log:
                // The end of reading gets its line too, so a log always shows the audience was read.
                if now >= nextLog || (lastPhase == .reading && s.phase != .reading) {
                    var shown = s
                    if lastPhase == .reading && s.phase != .reading { shown.phase = .reading; shown.inputBytesRead = s.inputBytesTotal }
                    log(shown, now: now)
                    if now >= nextLog { nextLog = now.addingTimeInterval(logInterval) }
                }
            case .none:
                break
            }
            lastPhase = s.phase
            if let systemd, now >= nextStatus {
                nextStatus = now.addingTimeInterval(Self.systemdInterval)
                systemd.status(ProgressText.line(s, now: now, width: 200))
            }
            if metrics != nil || pushgateway != nil, now >= nextMetrics {
                nextMetrics = now.addingTimeInterval(metricsInterval)
                if let metrics {
                    do { try metrics.write(s, now: now) } catch {
                        if !warnedMetrics { logger.warning("\(error)"); warnedMetrics = true }
                    }
                }
                if let pushgateway, let error = pushgateway.push(s, now: now), !warnedPush {
                    logger.warning("\(error)")
                    warnedPush = true
                }
            }
        }
        finished.signal()
    }

    private func log(_ s: RunProgress.Snapshot, now: Date) {
        let entry = ProgressText.logEntry(s, now: now)
        logger.notice("\(entry.message)", metadata: structuredLogs ? entry.fields.mapValues { .string($0) } : nil)
    }
}
