import Foundation
import HeraldState
import Synchronization

/// Live counters of one `herald run`, ticked by the runner and read by the progress display and the
/// metrics file from another thread. The runner's cost is a lock and a few additions per window of
/// answers or per 512 audience rows, so progress never slows the run it reports on.
public final class RunProgress: Sendable {
    public enum Phase: String, Sendable { case starting, reading, sending, done }

    public struct Snapshot: Sendable, Equatable {
        public var phase: Phase = .starting
        /// When the current phase started.
        public var phaseStarted = Date()
        public var runStarted = Date()
        /// Size on disk of every audience file (compressed size for gzip).
        public var inputBytesTotal = 0
        /// Bytes of the audience files on disk consumed so far (files already read, then the current one).
        public var inputBytesRead = 0
        /// Audience rows read by this process.
        public var rowsRead = 0
        /// Recipients not final when sending started (pending, inflight or retry): this run's work.
        public var sendTotal = 0
        /// Recipients already sent / failed when sending started (an earlier run of the campaign).
        public var sentBefore = 0
        public var failedBefore = 0
        /// Recipients that ended suppressed or throttled before sending started.
        public var otherFinalBefore: [String: Int] = [:]
        /// Answers recorded by this process, by stored status (`sent`, `failed`, `retry`, …).
        public var attempts: [String: Int] = [:]
        /// Answers recorded by this process, by status and reason (reasons as reports show them;
        /// connection errors folded into `connection_error` to keep label values few).
        public var attemptsByReason: [AttemptKey: Int] = [:]

        public var sent: Int { attempts["sent"] ?? 0 }
        public var failed: Int { attempts["failed"] ?? 0 }
        public var retried: Int { attempts["retry"] ?? 0 }
        /// Recipients of this run's work that reached a final state.
        public var finishedThisRun: Int { attempts.filter { $0.key != "retry" }.values.reduce(0, +) }

        /// 0…1 of the current phase's work: input bytes while reading, recipients while sending.
        public var fraction: Double? {
            switch phase {
            case .reading: return inputBytesTotal > 0 ? min(1, Double(inputBytesRead) / Double(inputBytesTotal)) : nil
            case .sending:
                let sending = sendTotal > 0 ? min(1, Double(finishedThisRun) / Double(sendTotal)) : 1
                // Sending while reading: the recipients recorded so far are the read share of the whole.
                guard inputBytesTotal > 0, inputBytesRead < inputBytesTotal else { return sending }
                return sending * Double(inputBytesRead) / Double(inputBytesTotal)
            case .starting: return nil
            case .done: return 1
            }
        }
    }

    public struct AttemptKey: Sendable, Hashable {
        public var status: String
        public var reason: String
    }

    private let state: Mutex<Snapshot>

    public init(now: Date = Date()) {
        state = Mutex(Snapshot(phaseStarted: now, runStarted: now))
    }

    public var snapshot: Snapshot { state.withLock { $0 } }

    /// Reading starts: `totalBytes` over every file, `doneBytes` of the files a resumed ingest skips.
    public func startReading(totalBytes: Int, doneBytes: Int, now: Date = Date()) {
        state.withLock {
            // Sending while reading may have started sending first: it stays the phase shown.
            if $0.phase == .starting { $0.phase = .reading; $0.phaseStarted = now }
            $0.inputBytesTotal = totalBytes; $0.inputBytesRead = doneBytes
        }
    }

    /// Where reading is: bytes on disk consumed (earlier files included) and rows read.
    public func read(bytes: Int, rows: Int) {
        state.withLock { $0.inputBytesRead = bytes; $0.rowsRead = rows }
    }

    /// Sending starts, from the state file's counts at that moment.
    public func startSending(counts: [StoredStatus: Int], now: Date = Date()) {
        state.withLock {
            $0.phase = .sending; $0.phaseStarted = now
            $0.sendTotal = (counts[.pending] ?? 0) + (counts[.inflight] ?? 0) + (counts[.retry] ?? 0)
            $0.sentBefore = counts[.sent] ?? 0
            $0.failedBefore = counts[.failed] ?? 0
            $0.otherFinalBefore = [StoredStatus.suppressed, .throttled].reduce(into: [:]) { $0[$1.rawValue] = counts[$1] ?? 0 }
        }
    }

    /// Recipients recorded while sending goes on (`audience.prescan: false`): the total grows as
    /// the audience is read.
    public func addSendWork(_ recipients: Int) {
        guard recipients > 0 else { return }
        state.withLock { $0.sendTotal += recipients }
    }

    /// One window of answers, as committed to the state file.
    public func recorded(_ outcomes: [AttemptOutcome]) {
        state.withLock { s in
            for o in outcomes {
                let status = o.status.rawValue
                s.attempts[status, default: 0] += 1
                s.attemptsByReason[AttemptKey(status: status, reason: Self.reasonLabel(o.reason)), default: 0] += 1
            }
        }
    }

    public func finish(now: Date = Date()) {
        state.withLock { $0.phase = .done; $0.phaseStarted = now }
    }

    /// A reason as a metric label: `connection_error: <curl text>` would make a series per message.
    static func reasonLabel(_ reason: String) -> String {
        if reason.hasPrefix("connection_error") { return "connection_error" }
        return reason
    }
}
