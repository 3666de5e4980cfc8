/// A validated campaign job: what `herald run` does. Parsed from YAML by HeraldJob; every path
/// here is already resolved against the job file's directory.
public struct JobSpec: Sendable {
    public var jobFile: String
    public var campaign: String
    public var audience: AudienceSpec
    public var apns: APNsSpec
    public var push: PushSpec
    public var throttle: ThrottleSpec
    public var retry: RetrySpec
    /// The campaign's SQLite state file; its directory is the state directory.
    public var statePath: String
    /// `state.network_filesystem`: what `herald` does when the state directory is on a network filesystem.
    public var stateNetworkFilesystem: NetworkFilesystemPolicy = .refuse
    public var reports: ReportsSpec
    /// The `ops` section: what the systems around a run hear from it.
    public var ops = OpsSpec()
    /// `events`: delivery events to a webhook and/or a file; nil: none.
    public var events: EventsSpec?
    /// `schedule`: each recipient's local sending window and quiet hours; nil: send at once.
    public var schedule: ScheduleSpec?
    /// `experiment`: variants, a holdout and a winner's rollout (ExperimentSpec.swift); nil: one template.
    public var experiment: ExperimentSpec?
    /// Keys that still load but no longer do anything, each named with its file and line and what
    /// replaced it: every command that reads the job prints them (`herald: warning: …`).
    public var warnings: [String] = []

    public init(jobFile: String, campaign: String, audience: AudienceSpec, apns: APNsSpec, push: PushSpec,
                throttle: ThrottleSpec, retry: RetrySpec, statePath: String, reports: ReportsSpec) {
        self.jobFile = jobFile; self.campaign = campaign; self.audience = audience; self.apns = apns
        self.push = push; self.throttle = throttle; self.retry = retry; self.statePath = statePath; self.reports = reports
    }
}

public enum AudienceFormat: String, Sendable, CaseIterable { case auto, csv, ndjson }

public struct AudienceFile: Sendable, Equatable {
    /// As written in the job (what reports show).
    public var name: String
    /// Absolute or job-relative-resolved path (what is opened).
    public var path: String
    public init(name: String, path: String) { self.name = name; self.path = path }
}

public struct AudienceSpec: Sendable {
    public var files: [AudienceFile]
    public var format: AudienceFormat
    public var tokenField: String
    public var localeField: String?
    public var idField: String?
    public var delimiter: UInt8
    /// `audience.registered_at_field`: when the device registered, for the suppression rules.
    public var registeredAtField: String?
    /// `audience.prescan`: read the whole audience once before the first push (default true).
    public var prescan: Bool
    /// `audience.max_invalid_rows` (default 5 %).
    public var maxInvalidRows: InvalidRowLimit
    /// `audience.allow_empty`: a file with no data rows is an empty audience, not a failed export (default false).
    public var allowEmpty = false
    /// Fields every recipient's payload needs whatever its locale, with what needs each
    /// (`push.template at aps.alert`): set from the compiled templates before the audience is read,
    /// so a CSV header without one is one error, not every row invalid. Not a job key.
    public var templateColumns: [(column: String, usedBy: String)] = []
    /// `audience.timezone_field`: the recipient's time zone, for `schedule`.
    public var timezoneField: String?
    /// `audience.channel_field`: a broadcast campaign whose rows name channels (a channel id in
    /// this field) instead of device tokens; `tokenField` is then unused.
    public var channelField: String?
    /// `audience.app_field`: which of `apns.apps` a row's recipient uses (required with more than one).
    public var appField: String?
    /// `audience.environment_field`: `production` or `sandbox` per row; nil: `apns.endpoint`'s.
    public var environmentField: String?
    public init(files: [AudienceFile], format: AudienceFormat = .auto, tokenField: String = "token",
                localeField: String? = nil, idField: String? = nil, delimiter: UInt8 = UInt8(ascii: ","),
                registeredAtField: String? = nil, prescan: Bool = true, maxInvalidRows: InvalidRowLimit = .default) {
        self.files = files; self.format = format; self.tokenField = tokenField
        self.localeField = localeField; self.idField = idField; self.delimiter = delimiter
        self.registeredAtField = registeredAtField; self.prescan = prescan; self.maxInvalidRows = maxInvalidRows
    }
}

public enum APNsEndpoint: Sendable, Equatable {
    case production, sandbox, simulator
    case custom(String)

    /// Apple's broadcast channel management host for this environment; nil for a custom URL or
    /// the in-process simulator (https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns).
    public var channelManagementURL: String? {
        switch self {
        case .production: return "https://api-manage-broadcast.push.apple.com:2196"
        case .sandbox: return "https://api-manage-broadcast.sandbox.push.apple.com:2195"
        case .simulator, .custom: return nil
        }
    }

    /// The base URL requests go to; nil for the in-process simulator (its port is chosen at run time).
    public var baseURL: String? {
        switch self {
        case .production: return "https://api.push.apple.com"
        case .sandbox: return "https://api.sandbox.push.apple.com"
        case .simulator: return nil
        case .custom(let url): return url
        }
    }

    public var name: String {
        switch self {
        case .production: return "production"
        case .sandbox: return "sandbox"
        case .simulator: return "simulator"
        case .custom(let url): return url
        }
    }
}

/// Where the .p8 key comes from. The key itself is never held in the spec.
public enum KeySource: Sendable, Equatable {
    case file(String)
    case environment(String)
}

public struct TokenAuthSpec: Sendable, Equatable {
    public var teamId: String
    public var keyId: String
    public var key: KeySource
    public init(teamId: String, keyId: String, key: KeySource) { self.teamId = teamId; self.keyId = keyId; self.key = key }
}

public struct APNsSpec: Sendable {
    public var endpoint: APNsEndpoint
    public var caFile: String?
    public var topic: String
    /// Token auth. Nil with `endpoint: simulator` (herald makes a key at run time) or with `certificate`.
    public var auth: TokenAuthSpec?
    public var connections: Int
    public var streamsPerConnection: Int
    /// Answers the in-process simulator gives (`endpoint: simulator` only), for rehearsals and demos.
    public var simulator = SimulatorRules()
    /// Seconds: TCP + TLS connect, one request until its answer, and idle time before a connection is closed.
    public var connectTimeout = 10
    public var requestTimeout = 30
    public var idleTimeout = 600
    /// Seconds: a connection the server has sent nothing on this long gets an HTTP/2 PING; no ACK
    /// within `pingTimeout` gives it up (docs/delivery.md, "Keepalive and idle close").
    public var pingInterval = 60
    public var pingTimeout = 15
    /// Certificate authentication instead of `auth` (ConnectionAuthSpec.swift).
    public var certificate: CertificateAuthSpec?
    /// nil: the environment decides (`https_proxy`, `all_proxy`, `no_proxy`), as libcurl reads it.
    public var proxy: ProxySpec?
    /// `apns.channels_endpoint`: where broadcast channels are managed, for a custom `endpoint`
    /// (`herald sim --management-port`); nil: Apple's host for `endpoint`.
    public var channelsEndpoint: String?
    /// `apns.apps`: the apps a campaign sends for, each with its topic and credentials (AppSpec.swift);
    /// empty: the job's own `topic` with `auth` or `certificate` (`appList` has it either way).
    public var apps: [AppSpec] = []
    /// `apns.endpoints`: where each environment's pushes go instead of Apple's host (a relay, or
    /// `herald sim` in a rehearsal); `endpoint` still says which environment rows default to.
    public var endpoints: [APNsEnvironment: String] = [:]
    /// `apns.environment_fallback`: a token one environment answers 400 BadDeviceToken is tried
    /// once in the other, and the environment that took it is remembered for the next campaign.
    public var environmentFallback = false
    /// `apns.connections` and `apns.streams_per_connection` when the job leaves them out: declared
    /// here once, for the loader and for code that builds a spec itself.
    public static let defaultConnections = 1
    public static let defaultStreamsPerConnection = 500

    public init(endpoint: APNsEndpoint, caFile: String? = nil, topic: String, auth: TokenAuthSpec?,
                connections: Int = APNsSpec.defaultConnections, streamsPerConnection: Int = APNsSpec.defaultStreamsPerConnection) {
        self.endpoint = endpoint; self.caFile = caFile; self.topic = topic; self.auth = auth
        self.connections = connections; self.streamsPerConnection = streamsPerConnection
    }
}

public enum MissingFieldPolicy: String, Sendable, CaseIterable {
    case error, empty
    case skipRecipient = "skip_recipient"
}

public enum OversizePolicy: String, Sendable, CaseIterable {
    case error
    case truncateBody = "truncate_body"
}

public enum CollapseIdPolicy: Sendable, Equatable {
    /// Derived from the campaign, so a resend after an ambiguous failure replaces, not duplicates.
    case auto
    case none
    case fixed(String)
}

public enum ExpirationSpec: Sendable, Equatable {
    /// Header absent: Apple's storage policy applies.
    case unset
    /// `0`: attempt once, do not store.
    case immediate
    /// Seconds from the moment of sending.
    case relative(Int)
    /// An absolute UNIX time.
    case absolute(Int)
}

public struct PushSpec: Sendable {
    public var type: PushType
    public var priority: Int
    public var template: JSONValue
    /// Locale variants in the order written; chosen by the locale field with fallback (`fr-CA` → `fr` → default).
    public var locales: [(locale: String, template: JSONValue)]
    public var missingField: MissingFieldPolicy
    public var oversize: OversizePolicy
    /// `.fixed` text may hold placeholders (`"order-{{order_id}}"`): rendered per recipient.
    public var collapseId: CollapseIdPolicy
    public var expiration: ExpirationSpec
    /// `push.priority` written as a placeholder (`"{{priority|10}}"`): rendered per recipient,
    /// and `priority` holds the placeholder's default (or the push type's default).
    public var priorityTemplate: String? = nil
    /// `push.expiration` written as a placeholder (`"{{expires_at}}"`): rendered per recipient
    /// with the same grammar as the job key (`ExpirationText`); `expiration` is then `.unset`.
    public var expirationTemplate: String? = nil
    /// `push.broadcast`: the push goes to broadcast channels, one request per channel, instead of
    /// to device tokens (nil: a device campaign).
    public var broadcast: BroadcastSpec? = nil
    /// Where the job wrote each template value, for messages (`TemplateLines`).
    public var templateLines = TemplateLines()
    public init(type: PushType, priority: Int, template: JSONValue, locales: [(locale: String, template: JSONValue)] = [],
                missingField: MissingFieldPolicy = .error, oversize: OversizePolicy = .error,
                collapseId: CollapseIdPolicy = .auto, expiration: ExpirationSpec = .unset) {
        self.type = type; self.priority = priority; self.template = template; self.locales = locales
        self.missingField = missingField; self.oversize = oversize; self.collapseId = collapseId; self.expiration = expiration
    }
}

/// `push.broadcast`: an iOS 18 Live Activity broadcast
/// (https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
public struct BroadcastSpec: Sendable, Equatable {
    /// One channel as the job lists it, with its line for messages.
    public struct Channel: Sendable, Equatable {
        public var id: String
        public var line: Int
        /// The name of the app (`apns.apps`) the channel was created for, as the mapping form of
        /// `push.broadcast.channels` gives it; nil in a plain list (the job's one app). Channels are
        /// per app: Apple answers a broadcast to another app's channel `ChannelNotRegistered`.
        public var app: String?
        public init(id: String, line: Int, app: String? = nil) { self.id = id; self.line = line; self.app = app }
    }
    /// `push.broadcast.channels`, in the order written (app by app in the mapping form); empty when
    /// the audience names the channels (`audience.channel_field`).
    public var channels: [Channel]
    public init(channels: [Channel] = []) { self.channels = channels }

    /// Apple: "the payload is limited to a maximum size of 5 KB (5,120 bytes)" for a broadcast.
    public static let payloadLimit = 5_120
}

extension JobSpec {
    /// A broadcast campaign: its recipients are channels, not device tokens.
    public var isBroadcast: Bool { push.broadcast != nil }
    /// Rows carry an app and an environment of their own (`apns.apps`, `audience.environment_field`):
    /// state, reports and events then say which (docs/many-apps.md).
    public var isRouted: Bool { !apns.apps.isEmpty || audience.environmentField != nil }
}

public enum SilentOverBudget: String, Sendable, CaseIterable { case skip, `defer` }

public struct ThrottleSpec: Sendable, Equatable {
    /// Pushes per second over all connections; 0 means unlimited.
    public var rate: Double
    public var silentRate: Double
    public var silentPerDevicePerHour: Int
    public var silentOverBudget: SilentOverBudget
    /// `throttle.deadline`: no send starts after it (nil: no deadline).
    public var deadline: ThrottleDeadline? = nil
    /// `throttle.frequency_cap`: pushes per device across every campaign of the category (nil: none).
    public var frequencyCap: FrequencyCap? = nil
    public init(rate: Double = 0, silentRate: Double = 50, silentPerDevicePerHour: Int = 2, silentOverBudget: SilentOverBudget = .skip,
                deadline: ThrottleDeadline? = nil) {
        self.rate = rate; self.silentRate = silentRate; self.silentPerDevicePerHour = silentPerDevicePerHour; self.silentOverBudget = silentOverBudget
        self.deadline = deadline
    }
}

/// `throttle.frequency_cap`: no more than `max` pushes per device token (and topic) in any `per`
/// seconds, for each limit, counted over every campaign of the state directory with the same category.
/// The silent-push budget is one too, built in (`silentBudget`): every per-device budget is counted
/// by the one ledger (HeraldState's SharedStore+Ledger.swift).
public struct FrequencyCap: Sendable, Equatable {
    public struct Limit: Sendable, Equatable {
        public var max: Int
        /// Seconds.
        public var per: Int
        public init(max: Int, per: Int) { self.max = max; self.per = per }
    }
    public enum OverCap: String, Sendable, CaseIterable { case skip, `defer` }

    public var category: String
    public var limits: [Limit]
    public var overCap: OverCap
    /// Whether pushes are counted per (topic, token) or per token alone (the silent-push budget).
    public var perTopic = true
    public init(category: String, limits: [Limit], overCap: OverCap = .skip) {
        self.category = category; self.limits = limits; self.overCap = overCap
    }
    /// The longest window: entries older than it count for no limit of this job.
    public var longest: Int { limits.map(\.per).max() ?? 0 }
}

extension JobSpec {
    /// The per-device budgets the job's pushes are counted under, in the order they are checked:
    /// the silent-push budget for background pushes, then `throttle.frequency_cap`.
    /// `silentWindow`: Apple's hour, shorter only in tests.
    public func deviceCaps(silentWindow: Int = FrequencyCap.silentBudgetWindow) -> [FrequencyCap] {
        var caps: [FrequencyCap] = []
        if push.type == .background {
            caps.append(.silentBudget(perDevice: throttle.silentPerDevicePerHour, window: silentWindow, over: throttle.silentOverBudget))
        }
        if let cap = throttle.frequencyCap { caps.append(cap) }
        return caps
    }
}

extension FrequencyCap {
    /// Whether this is the built-in silent-push budget rather than a job's `throttle.frequency_cap`.
    public var isSilentBudget: Bool { category == Self.silentBudgetCategory }

    /// The silent-push budget's category in the ledger. The job loader accepts only letters,
    /// digits, '.', '_' and '-' in `frequency_cap.category`, so no job's cap can share it.
    public static let silentBudgetCategory = "herald:silent-budget"

    /// Apple's "per hour" for background pushes: "don't try to send more than two or three per hour"
    /// (https://developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app).
    public static let silentBudgetWindow = 3600

    /// `throttle.silent_per_device_per_hour` as a cap: `perDevice` background pushes per device
    /// token in any `window` seconds, whichever campaign sends them. `perDevice` 0 means no budget:
    /// every push is admitted and still counted, so that campaigns with a budget see it.
    /// Counted per token alone: a device token already names one app on one device, and the
    /// entries written before the budget became a cap carry no topic.
    public static func silentBudget(perDevice: Int, window: Int = silentBudgetWindow, over: SilentOverBudget) -> FrequencyCap {
        var cap = FrequencyCap(category: silentBudgetCategory, limits: [Limit(max: perDevice > 0 ? perDevice : .max, per: window)],
                               overCap: over == .skip ? .skip : .defer)
        cap.perTopic = false
        return cap
    }
}

/// `throttle.deadline`: an absolute time, a duration from the start of each `herald run`, or
/// both (the earlier wins). A duration is per invocation so that a cron job gets a sending window
/// every time it runs; an absolute time is the moment the notification stops being worth sending.
public struct ThrottleDeadline: Sendable, Equatable {
    /// UNIX seconds.
    public var at: Int?
    /// Seconds after the run starts sending.
    public var after: Int?
    public init(at: Int? = nil, after: Int? = nil) { self.at = at; self.after = after }

    /// The deadline, in UNIX seconds, of a run that started sending at `start`.
    public func instant(startedAt start: Double) -> Double {
        let bounds = [at.map(Double.init), after.map { start + Double($0) }].compactMap { $0 }
        return bounds.min() ?? .infinity
    }
}

public struct RetrySpec: Sendable, Equatable {
    public var maxAttempts: Int
    /// Seconds after which a still-retryable recipient becomes failed with reason `gave_up`.
    public var giveUpAfter: Int
    /// Seconds after its first attempt in a run during which that run keeps retrying a recipient;
    /// past it the recipient stays retryable for the next run (exit 4).
    public var maxElapsed: Int = 600
    public init(maxAttempts: Int = 5, giveUpAfter: Int = 86_400) { self.maxAttempts = maxAttempts; self.giveUpAfter = giveUpAfter }
}

/// Job section `ops`.
public struct OpsSpec: Sendable, Equatable {
    /// `ops.ping_url`: a cron monitor's check URL (healthchecks.io's convention), pinged at the
    /// start and the end of each run.
    public var pingURL: String?
    /// `ops.pushgateway`: a Prometheus Pushgateway's base URL (`http://pushgateway:9091`).
    public var pushgateway: String?
    /// `ops.ping_timeout`: how long one ping may take, in seconds.
    public var pingTimeout = 10
    public init(pingURL: String? = nil, pingTimeout: Int = 10) { self.pingURL = pingURL; self.pingTimeout = pingTimeout }

    /// An http(s) URL with a host: where a ping or a push can go.
    public static func isHTTPURL(_ text: String) -> Bool {
        guard let scheme = text.split(separator: ":", maxSplits: 1).first?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        let rest = text.dropFirst(scheme.count + 1)
        guard rest.hasPrefix("//") else { return false }
        let host = rest.dropFirst(2).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return !host.isEmpty && !host.contains(where: { $0 == " " })
    }
}

/// Job section `events`: one JSON event per recipient outcome, delivered at least once from an
/// outbox in the state file to a webhook (`url`), a file (`file`), or both.
public struct EventsSpec: Sendable, Equatable {
    /// A request header whose value is read from the environment (`headers_env`), so the secret
    /// never sits in the job file.
    public struct HeaderFromEnvironment: Sendable, Equatable {
        public var name: String
        public var variable: String
        public init(name: String, variable: String) { self.name = name; self.variable = variable }
    }

    /// `events.url`: where batches are POSTed as NDJSON.
    public var url: String?
    /// `events.file`: an NDJSON file events are appended to (resolved against the job's directory).
    public var file: String?
    /// `events.batch`: most events per POST.
    public var batch = 500
    /// `events.flush`: longest an event waits for its batch to fill, in seconds.
    public var flush = 5
    /// `events.timeout`: how long one POST may take, in seconds.
    public var timeout = 10
    /// `events.headers_env`: header name to environment variable, in the job's order.
    public var headersEnv: [HeaderFromEnvironment] = []

    public init(url: String? = nil, file: String? = nil) { self.url = url; self.file = file }
}

/// Job key `state.network_filesystem`. SQLite's WAL mode "does not work over a network
/// filesystem" (https://www.sqlite.org/wal.html), so a state directory on one is refused unless
/// the job chooses `exclusive`: the state file held by one process for a whole run, its WAL index
/// in that process's memory, and `herald-shared.sqlite` in rollback-journal mode.
public enum NetworkFilesystemPolicy: String, Sendable, CaseIterable {
    case refuse, exclusive
}

public struct ReportsSpec: Sendable, Equatable {
    public var dir: String
    public var compress: Bool
    public init(dir: String, compress: Bool = false) { self.dir = dir; self.compress = compress }
}

/// Job key `apns.simulator`: token rules and faults for the in-process simulator (the keys
/// mirror `herald sim`'s flags).
public struct SimulatorRules: Sendable, Equatable {
    /// "Fail `count` times with `status` (429, 500 or 503), then succeed", per token.
    public struct Flaky: Sendable, Equatable {
        public var prefix: String
        public var count: Int
        public var status: Int
        public init(prefix: String, count: Int = 2, status: Int = 503) { self.prefix = prefix; self.count = count; self.status = status }
    }

    /// Token hex prefixes answered 410 Unregistered.
    public var unregisteredPrefixes: [String] = []
    /// Token hex prefixes answered 400 BadDeviceToken.
    public var badTokenPrefixes: [String] = []
    /// Token hex prefixes answered 410 ExpiredToken.
    public var expiredTokenPrefixes: [String] = []
    /// Token hex prefixes answered 400 DeviceTokenNotForTopic.
    public var notForTopicPrefixes: [String] = []
    public var flaky: [Flaky] = []
    /// A fixed APNs answer (a reason of Apple's table) for tokens with a prefix.
    public struct Answer: Sendable, Equatable {
        public var prefix: String
        public var reason: String
        public init(prefix: String, reason: String) { self.prefix = prefix; self.reason = reason }
    }
    public var answers: [Answer] = []
    /// Probabilities of 429 TooManyRequests, 500 and 503 for valid requests, and their seed.
    public var p429 = 0.0
    public var p500 = 0.0
    public var p503 = 0.0
    public var seed: UInt64 = 0
    public var latencyMs = 0
    public var latencyJitterMs = 0
    /// GOAWAY after this many answers on a connection.
    public var goawayAfter: Int?
    /// Abrupt close at this request on a connection, `before` or `after` processing it.
    public var closeAfter: Int?
    public var closeBeforeProcessing = false
    /// SETTINGS_MAX_CONCURRENT_STREAMS once authenticated; nil for the simulator's default.
    public var maxConcurrentStreams: Int?
    /// Seconds; nil for Apple's (an hour, 20 minutes).
    public var jwtMaxAge: Int?
    public var tokenUpdateInterval: Int?
    /// NDJSON request log of the simulator.
    public var logPath: String?
    public init(unregisteredPrefixes: [String] = [], badTokenPrefixes: [String] = [], logPath: String? = nil) {
        self.unregisteredPrefixes = unregisteredPrefixes; self.badTokenPrefixes = badTokenPrefixes; self.logPath = logPath
    }
}
