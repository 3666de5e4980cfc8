import Foundation
import HeraldCore
import Yams

/// Command-line overrides, so one job can be rehearsed against a simulator.
public struct JobOverrides: Sendable {
    public var statePath: String?
    public var reportsDir: String?
    public var endpoint: String?
    public var caFile: String?
    /// `--channels-endpoint` (`herald channels`).
    public var channelsEndpoint: String?
    /// `--winner` (`herald run`): `experiment.winner`.
    public var winner: String?
    /// The command reads no audience (`herald channels`): an `audience.files` entry that names no
    /// file yet is taken as written. A broadcast's audience lists channels, and they are created
    /// with this same job before that file can exist.
    public var audienceUnread: Bool
    public init(statePath: String? = nil, reportsDir: String? = nil, endpoint: String? = nil, caFile: String? = nil,
                channelsEndpoint: String? = nil, winner: String? = nil, audienceUnread: Bool = false) {
        self.statePath = statePath; self.reportsDir = reportsDir; self.endpoint = endpoint; self.caFile = caFile
        self.channelsEndpoint = channelsEndpoint; self.winner = winner; self.audienceUnread = audienceUnread
    }

    /// Environment variables that chose the old libcurl engine and its shims: still recognised,
    /// ignored, each with a warning (`herald run`), so a host's cron environment that sets them
    /// keeps working and its operator learns why they no longer do anything.
    public static let obsoleteVariables = ["HERALD_APNS_ENGINE", "HERALD_LIBCURL_SHIMS"]

    /// A warning for each obsolete variable `environment` sets.
    public static func obsoleteVariableWarnings(_ environment: [String: String]) -> [String] {
        obsoleteVariables.filter { !(environment[$0] ?? "").isEmpty }.map {
            "\($0) is no longer read and is ignored: every push goes through herald's own HTTP/2 connection on nghttp2 "
                + "(the libcurl engine and its shims were removed; docs/delivery.md)"
        }
    }
}

/// Reads a job file into a `JobSpec`. Relative paths resolve against the job file's own
/// directory (as docker-compose does), so cron can run a job from any working directory.
public enum JobLoader {
    static let topKeys = ["campaign", "audience", "apns", "push", "throttle", "retry", "state", "reports", "ops", "events", "schedule", "experiment"]

    public static func load(path: String, overrides: JobOverrides = JobOverrides()) throws(JobError) -> JobSpec {
        let jobURL = URL(fileURLWithPath: path).standardizedFileURL
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: jobURL.path, isDirectory: &isDir), !isDir.boolValue else {
            throw JobError(file: path, line: nil, "job file not found")
        }
        guard let data = FileManager.default.contents(atPath: jobURL.path) else {
            throw JobError(file: path, line: nil, "job file cannot be read (permission denied?)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw JobError(file: path, line: nil, "job file is not UTF-8 text")
        }
        let root: Node
        do {
            guard let n = try Yams.compose(yaml: text) else { throw JobError(file: path, line: nil, "job file is empty") }
            root = n
        } catch let e as JobError {
            throw e
        } catch {
            throw JobError(file: path, line: Self.line(of: error), "not valid YAML: \(Self.summary(of: error))")
        }
        let ctx = Context(file: path, baseDir: jobURL.deletingLastPathComponent(), audienceUnread: overrides.audienceUnread)
        return try ctx.parse(root, jobFile: jobURL.path, overrides: overrides)
    }

    static func line(of error: Error) -> Int? {
        if let y = error as? YamlError {
            switch y {
            case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): return mark.line
            case .duplicatedKeysInMapping(_, let context): return context.mark.line
            default: return nil
            }
        }
        return nil
    }

    static func summary(of error: Error) -> String {
        if let y = error as? YamlError {
            switch y {
            case .scanner(_, let problem, _, _), .parser(_, let problem, _, _), .composer(_, let problem, _, _): return problem
            case .duplicatedKeysInMapping(let keys, _):
                // Yams marks the first of the repeated keys.
                return "\(keys.map { "\"\($0)\"" }.joined(separator: ", ")) given more than once in one mapping (the first here)"
            default: break
            }
        }
        return String(describing: error).split(separator: "\n").first.map(String.init) ?? "parse error"
    }
}

struct Context {
    let file: String
    let baseDir: URL
    /// `JobOverrides.audienceUnread`.
    var audienceUnread = false

    func resolve(_ p: String) -> String {
        let expanded = (p as NSString).expandingTildeInPath
        if expanded.hasPrefix("/") { return URL(fileURLWithPath: expanded).standardizedFileURL.path }
        return baseDir.appendingPathComponent(expanded).standardizedFileURL.path
    }

    func parse(_ root: Node, jobFile: String, overrides: JobOverrides) throws(JobError) -> JobSpec {
        var top = try YAMLMapping(root, path: "", file: file)
        try top.rejectUnknown(known: JobLoader.topKeys)
        let campaign = try top.requiredString("campaign")
        guard !campaign.isEmpty, CampaignName(campaign).invalidCharacter == nil, campaign.first != "." else {
            throw top.error("campaign", "may contain only letters, digits, '.', '_', '-' and the placeholders {date}, {week}, {month} (it names files), not \"\(campaign)\"")
        }
        let audienceMap = try top.mapping("audience")
        // Only a broadcast that lists its channels goes without one.
        if audienceMap == nil, try top.mapping("push")?.has("broadcast") != true { throw JobError(file: file, line: nil, "audience is required") }
        let parsedAudience: AudienceSpec? = if var a = audienceMap { try parseAudience(&a) } else { nil }
        guard var apnsMap = try top.mapping("apns") else { throw JobError(file: file, line: nil, "apns is required") }
        let warnings = try obsoleteEngineKeys(&apnsMap)
        let apns = try parseAPNs(&apnsMap, overrides: overrides)
        guard var pushMap = try top.mapping("push") else { throw JobError(file: file, line: nil, "push is required") }
        var push = try parsePush(&pushMap, experiment: top.has("experiment"), apps: apns.apps)
        // An audience naming channels is a broadcast even where the job writes no push.broadcast.
        if parsedAudience?.channelField != nil && push.broadcast == nil { push.broadcast = BroadcastSpec() }
        if push.broadcast != nil, let e = try top.mapping("experiment") {
            throw JobError(file: file, line: e.line, "experiment does not apply to a broadcast: every subscriber of a channel gets the same push")
        }
        if apns.apps.isEmpty, case .failure(let problem) = push.type.topic(for: apns.topic) { throw apnsMap.error("topic", problem.description) }
        for (i, app) in apns.apps.enumerated() {
            if case .failure(let problem) = push.type.topic(for: app.topic) {
                throw JobError(file: file, line: app.line, "apns.apps[\(i)].topic \(problem.description)")
            }
        }
        try checkApps(apns, audience: parsedAudience, audienceMap: audienceMap, apnsMap: apnsMap, broadcast: push.broadcast != nil)
        var throttle = ThrottleSpec()
        let throttleMap = try top.mapping("throttle")
        if var t = throttleMap { throttle = try parseThrottle(&t) }
        try checkBroadcast(push: push, audience: parsedAudience, audienceMap: audienceMap, pushMap: pushMap, throttle: throttle,
                           throttleMap: throttleMap, hasSchedule: top.has("schedule"), top: top)
        // Without an audience section this is a broadcast that lists its channels (checked above).
        let audience = parsedAudience ?? AudienceSpec(files: [])
        var retry = RetrySpec()
        if var r = try top.mapping("retry") {
            retry.maxAttempts = try r.int("max_attempts", range: 1...100) ?? retry.maxAttempts
            retry.giveUpAfter = try r.duration("give_up_after") ?? retry.giveUpAfter
            retry.maxElapsed = try r.duration("max_elapsed") ?? retry.maxElapsed
            try r.finish(known: ["max_attempts", "give_up_after", "max_elapsed"])
        }
        // Defaults: state/<campaign>.sqlite and reports/<campaign>/ beside the jobs folder. The state
        // file is named after the campaign as written (placeholders included: one file holds every
        // period's runs); the reports directory keeps `{campaign}`, resolved per run.
        let besideJobs = baseDir.deletingLastPathComponent()
        var statePath = besideJobs.appendingPathComponent("state/\(campaign).sqlite").standardizedFileURL.path
        var networkFilesystem = NetworkFilesystemPolicy.refuse
        if let (n, _) = top.node("state") {
            if case .scalar(let s) = n { statePath = resolve(s.string) } else {
                var m = try YAMLMapping(n, path: "state", file: file)
                if let f = try m.string("file") { statePath = resolve(f) }
                networkFilesystem = try m.choice("network_filesystem", NetworkFilesystemPolicy.self) ?? .refuse
                try m.finish(known: ["file", "network_filesystem"])
            }
        }
        var reports = ReportsSpec(dir: besideJobs.appendingPathComponent("reports").standardizedFileURL.path + "/{campaign}")
        if let (n, _) = top.node("reports") {
            if case .scalar(let s) = n { reports.dir = resolve(s.string) } else {
                var m = try YAMLMapping(n, path: "reports", file: file)
                if let d = try m.string("dir") { reports.dir = resolve(d) }
                reports.compress = try m.bool("compress") ?? false
                try m.finish(known: ["dir", "compress"])
            }
        }
        var ops = OpsSpec()
        if var o = try top.mapping("ops") {
            if let url = try o.string("ping_url") {
                guard OpsSpec.isHTTPURL(url) else {
                    throw o.error("ping_url", "must be an http:// or https:// URL with a host, such as https://hc-ping.com/<uuid> (the value is not shown: a check's URL is a secret)")
                }
                ops.pingURL = url
            }
            if let t = try o.duration("ping_timeout") {
                guard (1...60).contains(t) else { throw o.error("ping_timeout", "must be from 1s to 60s, not \(t)s") }
                ops.pingTimeout = t
            }
            if let url = try o.string("pushgateway") {
                guard OpsSpec.isHTTPURL(url) else {
                    throw o.error("pushgateway", "must be an http:// or https:// URL with a host, such as http://pushgateway:9091, not \"\(SecretRedaction.withoutCredentials(url))\"")
                }
                ops.pushgateway = url
            }
            try o.finish(known: ["ping_url", "ping_timeout", "pushgateway"])
        }
        var events: EventsSpec?
        if var e = try top.mapping("events") { events = try parseEvents(&e) }
        var schedule: ScheduleSpec?
        if var s = try top.mapping("schedule") { schedule = try parseSchedule(&s) }
        var experiment: ExperimentSpec?
        if var e = try top.mapping("experiment") {
            let parsed = try parseExperiment(&e, campaign: campaign, winnerOverride: overrides.winner)
            // The first variant stands in for push.template where one template is asked for.
            push.template = parsed.variants[0].template
            push.locales = parsed.variants[0].locales
            push.templateLines = parsed.variants[0].templateLines
            experiment = parsed
        } else if let winner = overrides.winner {
            throw JobError(file: file, line: nil, "--winner \(winner): the job has no experiment section")
        }
        if audience.timezoneField != nil && schedule == nil, let audienceMap {
            throw audienceMap.error("timezone_field", "applies to a schedule section, which the job does not have")
        }
        try top.finish(known: JobLoader.topKeys)
        if let s = overrides.statePath { statePath = URL(fileURLWithPath: s).standardizedFileURL.path }
        if let r = overrides.reportsDir { reports.dir = URL(fileURLWithPath: r).standardizedFileURL.path }
        var spec = JobSpec(jobFile: jobFile, campaign: campaign, audience: audience, apns: apns, push: push,
                           throttle: throttle, retry: retry, statePath: statePath, reports: reports)
        spec.stateNetworkFilesystem = networkFilesystem
        spec.ops = ops
        spec.events = events
        spec.schedule = schedule
        spec.experiment = experiment
        spec.warnings = warnings
        return spec
    }
}
