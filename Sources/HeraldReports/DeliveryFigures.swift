import Foundation
import HeraldCore
import HeraldState

/// Figures gathered while the delivery rows stream past, for summary.json and summary.html:
/// latency percentiles and the send rate over time. Memory is bounded by the run's length in
/// seconds and its distinct latencies in ms, never by the audience.
public struct DeliveryFigures: Sendable, Equatable {
    /// Latency (ms) of each recipient's last answered attempt → recipients.
    public var latencyHistogram: [Int: Int] = [:]
    /// Recipients sent, by the UNIX second of their (last, successful) attempt.
    public var sentPerSecond: [Int64: Int] = [:]
    /// 410 Unregistered / ExpiredToken this run (unregistered.csv).
    public var unregistered = 0
    /// BadDeviceToken / DeviceTokenNotForTopic this run (rejected-tokens.csv).
    public var rejectedTokens = 0
    /// The recipients that streamed past, by report status and by reason (empty reasons left
    /// out): the summary's counts, taken in the same pass instead of three more queries over
    /// every recipient.
    public var byStatus: [RecipientStatus: Int] {
        Dictionary(uniqueKeysWithValues: RecipientStatus.allCases.map { ($0, statusTally[Self.slot($0)]) })
    }
    public private(set) var byReason: [String: Int] = [:]
    /// With a `schedule`: recipients sent, by the hour (0–23) of their own clock when the attempt
    /// started; nil when no sent recipient has a time zone.
    public private(set) var sentByLocalHour: [Int]? = nil
    /// Zones as the audience wrote them, looked up once each, with the offset last in force
    /// and the stretch it holds for: asking the tz database for every sent row costs more than
    /// the rest of the row's figures together.
    private var zones: [String: ZoneOffset] = [:]
    private struct ZoneOffset: Sendable, Equatable {
        /// Looked up on first use (nil inside: not a zone).
        var zone: TimeZone?? = nil
        var offset = 0
        var from = Int64.max
        var until = Int64.min

        /// The offset of zone `name` at `second`, worked out again only outside the stretch it was found for.
        mutating func offset(of name: String, at second: Int64) -> Int? {
            if zone == nil { zone = .some(TimeZoneText.zone(name)) }
            guard let known = zone, let zone = known else { return nil }
            if second < from || second >= until {
                let at = Date(timeIntervalSince1970: Double(second))
                offset = zone.secondsFromGMT(for: at)
                from = second
                until = zone.nextDaylightSavingTimeTransition(after: at).map { Int64($0.timeIntervalSince1970.rounded(.down)) } ?? .max
            }
            return offset
        }
    }
    /// With an `experiment`: recipients per arm (variant and rollout flag) and report status, in
    /// the order the arms first appear; nil for a campaign without one.
    public var variants: [VariantCount]? = nil
    /// With many apps: recipients per app and environment and report status, in the order they
    /// first appear; nil for a campaign for one app in one environment.
    public var apps: [AppCount]? = nil

    /// With a `schedule`: recipients and those sent, per time zone as the audience wrote it.
    public private(set) var byZone: [String: ZoneCount] = [:]
    public struct ZoneCount: Sendable, Equatable {
        public var recipients = 0
        public var sent = 0
        /// One recipient more (through the dictionary's in-place access: one lookup per row).
        mutating func count(sent wasSent: Bool) {
            recipients += 1
            if wasSent { sent += 1 }
        }
    }
    /// With a `schedule`: recipients by the UNIX second their local window opened (`due_at`), for
    /// the windows drawn over the send rate. As many entries as distinct due times (zones × days).
    public private(set) var windowOpenings: [Int64: Int] = [:]
    public var recipients: Int { statusTally.reduce(0, +) }
    private var statusTally = [Int](repeating: 0, count: RecipientStatus.allCases.count)

    private static func slot(_ s: RecipientStatus) -> Int {
        switch s {
        case .sent: 0
        case .failed: 1
        case .suppressed: 2
        case .throttled: 3
        case .pending: 4
        case .cancelled: 5
        case .heldOut: 6
        case .awaitingWinner: 7
        }
    }

    public init() {}

    /// Reasons that go to rejected-tokens.csv: often a sandbox/production or topic mix-up rather
    /// than a dead token, so kept apart from unregistered.csv.
    public static let rejectedReasons: Set<String> = ["BadDeviceToken", "DeviceTokenNotForTopic"]

    static func isUnregistered<D: DeliveryFields>(_ d: D) -> Bool { d.status == .failed && d.httpStatus == 410 }
    static func isRejected<D: DeliveryFields>(_ d: D) -> Bool {
        d.status == .failed && d.withText(.reason) { r in
            guard let r else { return false }
            return rejectedReasons.contains { $0.utf8.elementsEqual(r) }
        }
    }

    mutating func add<D: DeliveryFields>(_ d: D, attemptSeconds: inout AttemptSecondReader) {
        statusTally[Self.slot(d.status.reportStatus)] += 1
        d.withText(.reason) { r in
            if let r, !r.isEmpty { byReason[String(decoding: r, as: UTF8.self), default: 0] += 1 }
        }
        if let l = d.latencyMs, d.httpStatus != nil { latencyHistogram[l, default: 0] += 1 }
        if let due = d.dueAt { windowOpenings[Int64(due.rounded(.down)), default: 0] += 1 }
        let zoneName = d.withText(.timezone) { $0.map { String(decoding: $0, as: UTF8.self) } }
        if let zoneName { byZone[zoneName, default: ZoneCount()].count(sent: d.status == .sent) }
        if d.status == .sent, let second = d.withText(.lastAttemptAt, { $0.flatMap { attemptSeconds.second(of: $0) } }) {
            sentPerSecond[second, default: 0] += 1
            if let zoneName {
                if let offset = zones[zoneName, default: ZoneOffset()].offset(of: zoneName, at: second) {
                    let local = second + Int64(offset)
                    let hour = Int(((local % 86_400) + 86_400) % 86_400 / 3600)
                    if sentByLocalHour == nil { sentByLocalHour = [Int](repeating: 0, count: 24) }
                    sentByLocalHour![hour] += 1
                }
            }
        }
        if Self.isUnregistered(d) { unregistered += 1 }
        if Self.isRejected(d) { rejectedTokens += 1 }
        if let rollout = d.rollout { countVariant(d, rollout: rollout) }
        d.withText(.app) { app in
            guard let app else { return }
            d.withText(.environment) { countApp(app, environment: $0, status: d.status.reportStatus) }
        }
    }

    /// One recipient of a routed campaign into its app's and environment's counts (a handful:
    /// a linear search over their bytes, no String made per row).
    private mutating func countApp(_ app: UnsafeRawBufferPointer, environment: UnsafeRawBufferPointer?, status: RecipientStatus) {
        func same(_ a: [UInt8], _ b: UnsafeRawBufferPointer?) -> Bool {
            guard let b else { return a.isEmpty }
            return a.count == b.count && (a.isEmpty || a.withUnsafeBytes { memcmp($0.baseAddress!, b.baseAddress!, b.count) == 0 })
        }
        if let i = appKeys.indices.first(where: { same(appKeys[$0].app, app) && same(appKeys[$0].environment, environment) }) {
            apps![i].counts[status, default: 0] += 1
            return
        }
        let key = AppKey(app: Array(app), environment: environment.map { Array($0) } ?? [])
        appKeys.append(key)
        apps = (apps ?? []) + [AppCount(app: String(decoding: key.app, as: UTF8.self), environment: String(decoding: key.environment, as: UTF8.self),
                                        counts: [status: 1])]
    }

    /// One experiment recipient into its arm's counts (a handful of arms: a linear search over
    /// their names' bytes, compared without making a String of the row's).
    private mutating func countVariant<D: DeliveryFields>(_ d: D, rollout: Bool) {
        let status = d.status.reportStatus
        let found = d.withText(.variant) { v -> Int? in
            variantNames.indices.first { i in
                guard variants![i].rollout == rollout else { return false }
                guard let v, let name = variantNames[i] else { return v == nil && variantNames[i] == nil }
                return name.count == v.count && (v.isEmpty || name.withUnsafeBytes { memcmp($0.baseAddress!, v.baseAddress!, v.count) == 0 })
            }
        }
        if let i = found {
            variants![i].counts[status, default: 0] += 1
        } else {
            let name = d.withText(.variant) { $0.map { Array($0) } }
            variantNames.append(name)
            variants = (variants ?? []) + [VariantCount(variant: name.map { String(decoding: $0, as: UTF8.self) }, rollout: rollout, counts: [status: 1])]
        }
    }
    /// The arms' variant names as bytes, element for element of `variants`.
    private var variantNames: [[UInt8]?] = []
    /// The apps' names and environments as bytes, element for element of `apps`.
    private var appKeys: [AppKey] = []
    private struct AppKey: Sendable, Equatable { var app: [UInt8]; var environment: [UInt8] }

    /// The latency at or below which `fraction` of the answered recipients fall (nearest rank).
    public func latencyPercentile(_ fraction: Double) -> Int? {
        let total = latencyHistogram.values.reduce(0, +)
        guard total > 0 else { return nil }
        let rank = max(1, Int((fraction * Double(total)).rounded(.up)))
        var seen = 0
        for (ms, n) in latencyHistogram.sorted(by: { $0.key < $1.key }) {
            seen += n
            if seen >= rank { return ms }
        }
        return latencyHistogram.keys.max()
    }

    /// The send rate as at most `maxBars` buckets of whole seconds: (bucket start, bucket seconds,
    /// sends). The buckets also cover the seconds in `including` (the windows' openings).
    public func sendRate(maxBars: Int = 60, including: some Collection<Int64> = [Int64]()) -> (start: Int64, seconds: Int64, counts: [Int])? {
        guard let firstSent = sentPerSecond.keys.min(), let lastSent = sentPerSecond.keys.max() else { return nil }
        let first = min(firstSent, including.min() ?? firstSent), last = max(lastSent, including.max() ?? lastSent)
        let span = last - first + 1
        let width = max(1, (span + Int64(maxBars) - 1) / Int64(maxBars))
        var counts = [Int](repeating: 0, count: Int((span + width - 1) / width))
        for (second, n) in sentPerSecond { counts[Int((second - first) / width)] += n }
        return (first, width, counts)
    }
}

/// The UNIX second of a stored attempt time (ISO 8601 text). Rows in audience order share their
/// claim's time by the hundred (a chunk is claimed at once), so the last text parsed is kept and
/// a row with the same text is not parsed again.
struct AttemptSecondReader {
    private var lastText: [UInt8]?
    private var lastSecond: Int64?

    mutating func second(of text: UnsafeRawBufferPointer) -> Int64? {
        let same = lastText.map { last in
            last.count == text.count && (text.isEmpty || last.withUnsafeBytes { memcmp($0.baseAddress!, text.baseAddress!, text.count) == 0 })
        } ?? false
        if !same {
            let bytes = Array(text)
            lastText = bytes
            lastSecond = RegistrationTime.iso8601(bytes).map { $0 / 1000 }
        }
        return lastSecond
    }
}
