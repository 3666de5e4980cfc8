import Foundation
import HeraldCore

/// The words of the progress display, from a snapshot: one short line for a terminal, and a log
/// message with the same figures as metadata for collectors. Pure, so it is tested without a clock.
public enum ProgressText {
    /// Rate in units per second over the phase so far, nil until there is something to divide.
    static func rate(_ done: Int, since start: Date, now: Date) -> Double? {
        let elapsed = now.timeIntervalSince(start)
        guard elapsed >= 0.5, done > 0 else { return nil }
        return Double(done) / elapsed
    }

    /// Seconds left at the phase's average rate; nil when unknown.
    static func eta(_ s: RunProgress.Snapshot, now: Date) -> Double? {
        let elapsed = now.timeIntervalSince(s.phaseStarted)
        guard elapsed >= 0.5, let f = s.fraction, f > 0, f < 1 else { return nil }
        return elapsed * (1 - f) / f
    }

    /// The terminal line: `sending  63%  630,000/1,000,000  sent 629,000  failed 1,000  9,812/s  ETA 0:38`.
    public static func line(_ s: RunProgress.Snapshot, now: Date = Date(), width: Int? = nil) -> String {
        var parts: [String] = []
        let percent = s.fraction.map { String(format: "%3.0f%%", $0 * 100) } ?? "   "
        switch s.phase {
        case .starting:
            parts = ["starting"]
        case .reading:
            parts = ["reading  \(percent)", "\(bytes(s.inputBytesRead))/\(bytes(s.inputBytesTotal))", "\(number(s.rowsRead)) rows"]
            if let r = rate(s.rowsRead, since: s.phaseStarted, now: now) { parts.append("\(number(Int(r))) rows/s") }
        case .sending, .done:
            parts = ["sending  \(percent)", "\(number(s.finishedThisRun))/\(number(s.sendTotal))",
                     "sent \(number(s.sentBefore + s.sent))", "failed \(number(s.failedBefore + s.failed))"]
            if s.retried > 0 { parts.append("retried \(number(s.retried))") }
            if let r = rate(s.finishedThisRun, since: s.phaseStarted, now: now) { parts.append("\(number(Int(r)))/s") }
        }
        if s.phase == .reading || s.phase == .sending {
            parts.append("ETA " + (eta(s, now: now).map(duration) ?? "--"))
        }
        let text = parts.joined(separator: "  ")
        guard let width, text.count >= width else { return text }
        return String(text.prefix(max(0, width - 1)))
    }

    /// A log message and its metadata (`phase`, `percent`, `sent`, `failed`, `per_second`, `eta_seconds`…).
    public static func logEntry(_ s: RunProgress.Snapshot, now: Date = Date()) -> (message: String, fields: [String: String]) {
        var fields = ["phase": s.phase.rawValue]
        if let f = s.fraction { fields["percent"] = String(format: "%.1f", f * 100) }
        let eta = eta(s, now: now)
        if let eta { fields["eta_seconds"] = String(Int(eta.rounded())) }
        var message = "progress: " + line(s, now: now).split(separator: " ").joined(separator: " ")
        switch s.phase {
        case .reading:
            fields["input_bytes"] = String(s.inputBytesRead)
            fields["input_bytes_total"] = String(s.inputBytesTotal)
            fields["rows"] = String(s.rowsRead)
            if let r = rate(s.rowsRead, since: s.phaseStarted, now: now) { fields["per_second"] = String(Int(r)) }
        case .sending, .done:
            fields["done"] = String(s.finishedThisRun)
            fields["total"] = String(s.sendTotal)
            fields["sent"] = String(s.sentBefore + s.sent)
            fields["failed"] = String(s.failedBefore + s.failed)
            fields["retried"] = String(s.retried)
            if let r = rate(s.finishedThisRun, since: s.phaseStarted, now: now) { fields["per_second"] = String(Int(r)) }
        case .starting:
            message = "progress: starting"
        }
        return (message, fields)
    }

    static func number(_ n: Int) -> String { DecimalDigits.grouped(n) }

    static func bytes(_ n: Int) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(n)
        var unit = 0
        while value >= 1000 && unit < units.count - 1 { value /= 1000; unit += 1 }
        return unit == 0 ? "\(n) B" : String(format: "%.1f ", value) + units[unit]
    }

    /// `0:38`, `12:05`, `3:07:41`.
    static func duration(_ seconds: Double) -> String {
        let t = Int(seconds.rounded())
        let (h, m, s) = (t / 3600, t % 3600 / 60, t % 60)
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
    }
}
