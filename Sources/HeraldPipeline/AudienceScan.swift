import Foundation
import HeraldAudience
import HeraldCore
import HeraldPayload
import HeraldState

/// One read of the whole audience that sends nothing and records nothing: `herald validate`, and
/// the prescan of `herald run`, which must find a truncated gzip, a broken header or too many bad
/// rows before the first push leaves, and tells progress the total.
///
/// Every file is read once, in the job's order. Each valid row is rendered exactly as the run
/// would render it (so a render error counts as invalid here too), and its token is counted by a
/// `DistinctTokenCounter` that sorts on disk: memory stays the same for ten thousand rows or ten million.
public struct AudienceScan {
    /// How much of a row's processing to do.
    public enum Depth: Sendable {
        /// Parse, normalize tokens, render payloads and headers, count distinct tokens: everything but sending.
        case full
        /// Inflate, parse and normalize tokens only; no rendering and no duplicate count
        /// (`distinct` stays 0). The reading benchmark measures this.
        case parseOnly
    }

    public private(set) var audience: AudienceSpec
    public let depth: Depth
    /// A broadcast campaign: its rows name channels.
    public let broadcast: Bool
    /// The job's apps, when rows are routed (`AudienceScanResult.apps`).
    private let apps: [AudienceScanResult.App]
    private let renderer: RecipientRenderer?
    /// `push.broadcast.channels`: the rows a broadcast job lists instead of an audience file.
    private let listed: [AudienceRecord]

    /// A scan of a job's audience; compiles the job's templates (payload and headers) for a full
    /// scan (a template error is exit 2, as in `herald run`).
    public init(spec: JobSpec, depth: Depth = .full) throws(RunFailure) {
        audience = spec.audience
        self.depth = depth
        listed = ListedChannels.records(of: spec)
        broadcast = spec.isBroadcast
        apps = spec.isRouted && depth == .full ? spec.apns.appList.map { app in
            AudienceScanResult.App(name: app.name, topic: app.topic, endpoints: Dictionary(uniqueKeysWithValues: APNsEnvironment.allCases.map {
                ($0, spec.apns.baseURL(for: $0) ?? "the in-process simulator")
            }))
        } : []
        if depth == .full {
            renderer = try CampaignRunner.wrap(.preparing) { () throws(PayloadTemplateError) in
                var r = RecipientRenderer(payload: try PayloadRenderer(push: spec.push, section: spec.templateSection), headers: try HeaderRenderer(job: spec),
                                          localeField: spec.audience.localeField, registeredAtField: spec.audience.registeredAtField,
                                          dueTimes: spec.schedule.map { _ in DueTimes(job: spec, now: Date(), runStarted: Date()) })
                // Each row is checked as the run would render it: for its app, with its own variant, or with every one.
                if spec.isRouted { r.routing = AppRouting(job: spec) }
                if let e = spec.experiment {
                    r.experiment = try ExperimentRenderers(job: spec, experiment: e, campaign: CampaignName(spec.campaign).resolved(at: Date()))
                }
                return r
            }
            audience.templateColumns = renderer?.fieldsEveryRowNeeds ?? []
        } else {
            renderer = nil
        }
    }

    /// Reads every file to the end. A file-level problem (missing file, truncated or corrupt gzip,
    /// bad header) throws exit 2; `shouldStop` (a signal) throws exit 4. Row problems are counted
    /// in the result, which says whether they are over `audience.max_invalid_rows`.
    /// Every `progressEvery` rows, `shouldStop` is asked and `progress` told; `progress` is told
    /// once more at the end.
    public func run(progressEvery: Int = 100_000, progress: (AudienceScanProgress) -> Void = { _ in },
                    shouldStop: () -> Bool = { false }) throws(RunFailure) -> AudienceScanResult {
        let started = ContinuousClock.now
        var result = AudienceScanResult(limit: audience.maxInvalidRows, depth: depth)
        result.broadcast = broadcast
        result.apps = apps
        let tokens = depth == .full ? DistinctTokenCounter() : nil
        let totalBytes = Self.totalBytes(audience.files)
        var bytesBefore = 0
        for file in audience.files {
            let reader = try CampaignRunner.wrap(.preparing) { () throws(AudienceError) in try AudienceFileReader(file: file, spec: audience) }
            var counts = AudienceScanResult.File(name: file.name, bytes: reader.fileSize,
                                                 compressed: reader.isCompressed, format: reader.detectedFormat)
            var untilProgress = progressEvery
            while let event = try CampaignRunner.wrap(.preparing, { () throws(AudienceError) in try reader.next() }) {
                if try count(consume event, into: &result, tokens: tokens) { counts.valid += 1 } else { counts.invalid += 1 }
                counts.rows += 1
                untilProgress -= 1
                if untilProgress == 0 {
                    untilProgress = progressEvery
                    if shouldStop() {
                        throw RunFailure(.incomplete, "stopped while reading the audience (\(AudienceScanResult.grouped(result.rows)) rows read); nothing was sent")
                    }
                    progress(AudienceScanProgress(rows: result.rows, bytesRead: bytesBefore + reader.compressedBytesRead, totalBytes: totalBytes))
                }
            }
            bytesBefore += reader.compressedBytesRead
            result.files.append(counts)
        }
        for record in listed { _ = try count(.record(record), into: &result, tokens: tokens) }
        if let tokens {
            let byApp = try CampaignRunner.wrap(.preparing) { () throws(ScratchFileError) in try tokens.countByApp() }
            result.distinct = byApp.values.reduce(0, +)
            if !result.apps.isEmpty {
                for i in result.apps.indices { result.apps[i].distinct = byApp[UInt16(i)] ?? 0 }
            }
        }
        result.seconds = Self.seconds(ContinuousClock.now - started)
        progress(AudienceScanProgress(rows: result.rows, bytesRead: bytesBefore, totalBytes: totalBytes))
        return result
    }

    /// Counts one row (rendered, its token counted once); true when it is valid.
    @inline(__always)
    private func count(_ event: consuming AudienceEvent, into result: inout AudienceScanResult, tokens: DistinctTokenCounter?) throws(RunFailure) -> Bool {
        result.rows += 1
        switch consume event {   // not a copy: a record is a dozen references to retain
        case .invalid(let row):
            result.countInvalid(row)
            return false
        case .record(let record):
            var app: UInt16 = 0
            switch renderer?.render(record) {
            case .invalid(let row)?:
                result.countInvalid(row)
                return false
            case .recipient(_, _, _, _, _, let route)?:
                app = route.app
                if !result.apps.isEmpty { result.apps[Int(app)].rows[route.environment, default: 0] += 1 }
            case nil:
                break
            }
            if let tokens { try CampaignRunner.wrap(.preparing) { () throws(ScratchFileError) in try tokens.insert(record.token, app: app) } }
            result.valid += 1
            return true
        }
    }

    private static func totalBytes(_ files: [AudienceFile]) -> Int {
        files.reduce(0) { sum, file in
            sum + (((try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? Int) ?? 0)
        }
    }

    private static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}

/// How far a scan is, for a progress line: bytes are of the files on disk (compressed bytes for
/// gzip), so `bytesRead / totalBytes` is the share done.
public struct AudienceScanProgress: Sendable, Equatable {
    public let rows: Int
    public let bytesRead: Int
    public let totalBytes: Int
}

/// What a scan counted. `rows = valid + invalid`, `valid = distinct + duplicates`, as in summary.json.
public struct AudienceScanResult: Sendable {
    /// One file's figures.
    public struct File: Sendable, Equatable {
        /// As written in the job (or matched by its pattern).
        public let name: String
        public var rows = 0
        public var valid = 0
        public var invalid = 0
        /// Size on disk.
        public let bytes: Int
        public let compressed: Bool
        public let format: AudienceFormat
        /// `gzip` or `none`.
        public var compression: String { compressed ? "gzip" : "none" }

        init(name: String, bytes: Int, compressed: Bool, format: AudienceFormat) {
            self.name = name; self.bytes = bytes; self.compressed = compressed; self.format = format
        }
    }

    /// How many invalid rows are kept as examples for the operator.
    public static let exampleLimit = 10

    public internal(set) var rows = 0
    public internal(set) var valid = 0
    /// Different tokens among the valid rows (0 for a parse-only scan).
    public internal(set) var distinct = 0
    public internal(set) var invalid = 0
    public internal(set) var invalidByReason: [InvalidRowReason: Int] = [:]
    public internal(set) var files: [File] = []
    /// The first invalid rows in file order, at most `exampleLimit`.
    public internal(set) var firstInvalid: [InvalidRow] = []
    /// Wall-clock time of the scan.
    public internal(set) var seconds = 0.0
    /// The rows name broadcast channels, not device tokens.
    public internal(set) var broadcast = false
    /// One app's figures (`apns.apps`, `audience.environment_field`).
    public struct App: Sendable, Equatable {
        /// "" for a job without `apns.apps`.
        public let name: String
        public let topic: String
        /// Distinct tokens among its valid rows.
        public internal(set) var distinct = 0
        /// Valid rows per environment.
        public internal(set) var rows: [APNsEnvironment: Int] = [:]
        /// Where each environment's pushes go (Apple's host, `apns.endpoints`, or the simulator).
        public let endpoints: [APNsEnvironment: String]
    }
    /// Per app, in the job's order; empty for a job that sends for one app to one environment.
    public internal(set) var apps: [App] = []
    public let limit: InvalidRowLimit
    public let depth: AudienceScan.Depth

    init(limit: InvalidRowLimit, depth: AudienceScan.Depth) {
        self.limit = limit
        self.depth = depth
    }

    /// Valid rows whose token an earlier valid row already had.
    public var duplicates: Int { depth == .full ? valid - distinct : 0 }

    /// The most invalid rows `audience.max_invalid_rows` allows for this many rows.
    public var allowedInvalid: Int { limit.allowed(rows: rows) }

    /// True when the run must stop with exit 5.
    public var isOverInvalidLimit: Bool { limit.isExceeded(invalid: invalid, rows: rows) }

    /// One line for the operator: how many, out of how many, and the limit.
    public var invalidLimitMessage: String {
        let verdict = isOverInvalidLimit ? "too many invalid rows" : "invalid rows within the limit"
        return "\(verdict): \(Self.grouped(invalid)) of \(Self.grouped(rows)) rows (audience.max_invalid_rows: \(limit) allows \(Self.grouped(allowedInvalid)))"
    }

    /// 1234567 → "1,234,567", as the rest of herald's output writes counts.
    static func grouped(_ n: Int) -> String {
        DecimalDigits.grouped(n)
    }

    mutating func countInvalid(_ row: InvalidRow) {
        invalid += 1
        invalidByReason[row.reason, default: 0] += 1
        if firstInvalid.count < Self.exampleLimit { firstInvalid.append(row) }
    }
}
