import Foundation
import HeraldCore
import HeraldState
import Logging

/// What `herald run`'s operations flags add to a run: the shard it sends (`--shard`) and the live
/// counters behind progress and the metrics file. The runner calls it at a few points (one line
/// each) so that the stages stay unaware of terminals, log formats and Prometheus.
public final class RunOperations {
    public let shard: Shard?
    public let progress: RunProgress?
    /// systemd's notification socket, when the run is a `Type=notify` service's.
    public let systemd: SystemdNotifier?
    /// Bytes of the audience files before each file: progress counts input bytes over all files.
    private var fileOffsets: [Int] = []
    /// The cron monitor's start ping, sent once the run holds the lock.
    private let ping: (CronPing, Logger)?

    public init(shard: Shard? = nil, progress: RunProgress? = nil, systemd: SystemdNotifier? = nil, ping: (CronPing, Logger)? = nil) {
        self.shard = shard
        self.progress = progress
        self.systemd = systemd
        self.ping = ping
    }

    /// The run holds the campaign's lock. A run that finds it held (exit 75) never gets here, so
    /// it sends no `/start`: that would restart the timer of the run that holds it and hide that
    /// run hanging.
    public func locked() {
        if let (ping, logger) = ping { ping.started(logger: logger) }
    }

    /// Whether this process records the row (see `Shard` for which rows a shard owns).
    public func owns(_ event: AudienceEvent) -> Bool {
        guard let shard else { return true }
        switch event {
        case .record(let r): return shard.owns(r.token)
        case .invalid(let row): return shard.ownsRejectedRow(line: row.location.line)
        }
    }

    /// Reading starts at file `first` (later than 0 when a resumed ingest skips read files).
    public func startReading(_ files: [AudienceFile], first: Int) {
        guard let progress else { return }
        var offsets: [Int] = []
        var total = 0
        for file in files {
            offsets.append(total)
            total += ((try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? Int) ?? 0
        }
        fileOffsets = offsets
        let done = offsets.indices.contains(first) ? offsets[first] : total
        progress.startReading(totalBytes: total, doneBytes: done)
    }

    /// Called every few hundred rows and at the end of each file.
    public func reading(file index: Int, bytes: Int, rows: Int) {
        guard let progress, index < fileOffsets.count else { return }
        progress.read(bytes: fileOffsets[index] + bytes, rows: rows)
    }

    /// Sending starts: the state file's counts are this run's starting line.
    public func startSending(_ state: RunState) {
        systemd?.ready(status: "sending")
        guard let progress, let counts = try? state.statusCounts() else { return }
        progress.startSending(counts: counts)
    }

    /// A signal asked the run to stop after the requests in flight.
    public func stopping() {
        systemd?.stopping()
    }

    /// A window of answers was committed.
    public func recorded(_ outcomes: [AttemptOutcome]) {
        progress?.recorded(outcomes)
    }
}
