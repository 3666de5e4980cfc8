import Foundation
import HeraldCore
import HeraldState
import HeraldTestHooks

/// The names of a run's report files in its reports directory. Frozen: add, never rename.
public struct ReportFiles: Sendable {
    public let directory: String
    /// `reports.compress`: deliveries.csv and deliveries.ndjson are written gzip-compressed (`.gz`).
    public let compress: Bool
    public init(directory: String, compress: Bool = false) { self.directory = directory; self.compress = compress }

    var gz: String { compress ? ".gz" : "" }
    public var deliveriesPath: String { directory + "/deliveries.csv" + gz }
    public var deliveriesNDJSONPath: String { directory + "/deliveries.ndjson" + gz }
    public var invalidPath: String { directory + "/invalid.csv" }
    public var unregisteredPath: String { directory + "/unregistered.csv" }
    public var rejectedPath: String { directory + "/rejected-tokens.csv" }
    /// An experiment's held-out recipients (written only for a campaign with an `experiment`).
    public var holdoutPath: String { directory + "/holdout.csv" }
    public var summaryHTMLPath: String { directory + "/summary.html" }
    public var summaryPath: String { directory + "/summary.json" }

    /// In the order they are written: summary.json last, so its presence with the run's id and end
    /// time means the whole set is there.
    public var paths: [String] {
        [deliveriesPath, deliveriesNDJSONPath, invalidPath, unregisteredPath, rejectedPath, summaryHTMLPath, summaryPath]
    }

    public var names: [String] { (paths + [holdoutPath]).map { ($0 as NSString).lastPathComponent } }
}

/// Writes the delivery-row reports of one set in a single pass over the rows (each file to a
/// temporary name, renamed into place by `commit`), gathering the figures the summary needs.
final class DeliveryReportWriter {
    private let deliveries: AtomicFile
    private let ndjson: AtomicFile
    private let unregistered: AtomicFile
    private let rejected: AtomicFile
    /// holdout.csv, opened at the first row of an experiment.
    private var holdout: AtomicFile?
    private let holdoutPath: String
    private(set) var figures = DeliveryFigures()
    private var attemptSeconds = AttemptSecondReader()
    /// The rows are broadcast channels: their id goes in `channel_id`, and `token` stays empty.
    private let broadcast: Bool

    init(files: ReportFiles, broadcast: Bool = false) throws(ReportError) {
        self.broadcast = broadcast
        deliveries = try AtomicFile(path: files.deliveriesPath, gzip: files.compress)
        ndjson = try AtomicFile(path: files.deliveriesNDJSONPath, gzip: files.compress)
        unregistered = try AtomicFile(path: files.unregisteredPath)
        rejected = try AtomicFile(path: files.rejectedPath)
        holdoutPath = files.holdoutPath
        try deliveries.write(CSV.line(DeliveryFormat.deliveriesColumns))
        try unregistered.write(CSV.line(DeliveryFormat.unregisteredColumns))
        try rejected.write(CSV.line(DeliveryFormat.rejectedColumns))
    }

    func add<D: DeliveryFields>(_ d: D) throws(ReportError) {
        try deliveries.append { DeliveryFormat.csv(d, broadcast: broadcast, to: &$0) }
        try ndjson.append { DeliveryFormat.ndjson(d, broadcast: broadcast, to: &$0) }
        if DeliveryFigures.isUnregistered(d) { try unregistered.append { DeliveryFormat.unregistered(d, to: &$0) } }
        if DeliveryFigures.isRejected(d) { try rejected.append { DeliveryFormat.rejected(d, to: &$0) } }
        if d.rollout != nil {
            if holdout == nil {
                holdout = try AtomicFile(path: holdoutPath)
                try holdout!.write(CSV.line(DeliveryFormat.holdoutColumns))
            }
            if d.status == .heldOut { try holdout!.append { DeliveryFormat.holdout(d, to: &$0) } }
        }
        figures.add(d, attemptSeconds: &attemptSeconds)
    }

    func commit() throws(ReportError) {
        try deliveries.commit()
        CrashPoint.report.reached()
        try ndjson.commit()
        try unregistered.commit()
        try rejected.commit()
        try holdout?.commit()
    }
}
