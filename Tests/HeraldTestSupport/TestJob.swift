import Foundation

/// The job file an end-to-end test runs, typed: the keys the test sets, herald's own defaults
/// for the rest. `write(in:)` puts it at `jobs/<name>.yaml` in the test's directory (with the
/// audience rows it was given at `data/<name>.csv`, gzip-compressed or not), so every path in it
/// is relative to `jobs/` as an operator's would be.
///
/// Defaults: the campaign is `name`; the endpoint is the in-process simulator (`endpoint:
/// simulator`), topic `com.example.app`, whose request log goes to `out/<name>.ndjson`; the push is
/// an alert saying "hello". A key the builder does not have goes in `extra` (or a section's
/// `extra`), as YAML, and nowhere else.
///
///     let job = try TestJob("retries", tokens: tokens(1...5)) {
///         $0.apns.simulator.flaky = [.init(prefix: "f1a4", count: 5, status: 503)]
///         $0.retry.maxAttempts = 1
///     }.write(in: dir)
public struct TestJob: Sendable {
    /// The file's name (`jobs/<name>.yaml`), its audience's (`data/<name>.csv`) and its simulator log's (`out/<name>.ndjson`).
    public var name: String
    public var campaign: String
    public var audience = Audience()
    public var apns = APNs()
    public var push = Push()
    public var throttle = Throttle()
    /// `schedule`, a YAML flow mapping: `{ local_time: { from: "09:00", to: "11:00" }, wait: false }`.
    public var schedule: String?
    public var retry = Retry()
    public var reports = Reports()
    public var state = State()
    /// `events`, a YAML flow mapping: `{ url: "http://…", batch: 100 }`.
    public var events: String?
    public var ops = Ops()
    /// Top-level YAML lines for keys the builder does not have (or a mistake a test makes on purpose).
    public var extra: String?
    /// Audience rows written with the job (`audienceFile`), header first; nil writes none.
    public var rows: [String]?
    public var gzip = false

    /// `tokens`: a one-column audience (`token`) of these rows. `rows`: a whole file, header first.
    public init(_ name: String, tokens: [String]? = nil, rows: [String]? = nil, gzip: Bool = false,
                _ configure: (inout TestJob) -> Void = { _ in }) {
        self.name = name
        campaign = name
        self.gzip = gzip
        self.rows = rows ?? tokens.map { ["token"] + $0 }
        if self.rows != nil { audience.files = ["../data/\(audienceFile)"] }
        configure(&self)
    }

    /// Where the rows are written, in `data/`.
    public var audienceFile: String { "\(name).csv" + (gzip ? ".gz" : "") }

    public struct Audience: Sendable {
        /// As the job names them, relative to `jobs/`: `../data/a.csv.gz`, a glob.
        public var files: [String] = []
        public var format: String?
        public var tokenField: String?
        public var channelField: String?
        public var localeField: String?
        public var idField: String?
        public var timezoneField: String?
        public var registeredAtField: String?
        /// `app_field`, `environment_field` (many apps).
        public var appField: String?
        public var environmentField: String?
        /// A count or a percentage: `2`, `100%`.
        public var maxInvalidRows: String?
        public var prescan: Bool?
        public var allowEmpty: Bool?
        public var extra: String?
        public init() {}
    }

    public struct APNs: Sendable {
        /// `simulator` (in process), `production`, `development` or a URL.
        public var endpoint = "simulator"
        public var channelsEndpoint: String?
        public var caFile: String?
        public var topic = "com.example.app"
        /// `apns.apps`, one YAML flow mapping per app (`{ name: a, topic: com.a }`); `topic` is then not written.
        public var apps: [String]?
        /// `apns.endpoints`, a YAML flow mapping; `apns.environment_fallback`.
        public var endpoints: String?
        public var environmentFallback: Bool?
        /// The .p8 file of a provider token (`TestKey.teamId`, `TestKey.keyId`).
        public var keyFile: String?
        /// `apns.certificate`, a YAML flow mapping.
        public var certificate: String?
        /// `apns.proxy`: a URL, or a YAML flow mapping.
        public var proxy: String?
        public var engine: String?
        public var connections: Int?
        public var streamsPerConnection: Int?
        public var requestTimeout: String?
        public var pingInterval: String?
        public var pingTimeout: String?
        /// Read by the in-process simulator only (`endpoint: simulator`).
        public var simulator = Simulator()
        public var extra: String?
        public init() {}
    }

    /// `apns.simulator`: the in-process simulator's rules and faults (docs/simulator.md).
    public struct Simulator: Sendable {
        /// Relative to `jobs/`; nil: `../out/<name>.ndjson`.
        public var log: String?
        public var unregisteredPrefixes: [String] = []
        public var expiredTokenPrefixes: [String] = []
        public var badTokenPrefixes: [String] = []
        public var notForTopicPrefixes: [String] = []
        public var flaky: [Flaky] = []
        /// Tokens starting with `prefix` answered `reason`.
        public var answers: [(prefix: String, reason: String)] = []
        public var latencyMs: Int?
        public var latencyJitterMs: Int?
        public var maxConcurrentStreams: Int?
        public var goawayAfter: Int?
        public var closeAfter: Int?
        public var p503: Double?
        public var p429: Double?
        public var seed: Int?
        public var jwtMaxAge: String?
        public init() {}

        public struct Flaky: Sendable {
            public var prefix: String, count: Int, status: Int
            public init(prefix: String, count: Int, status: Int) { self.prefix = prefix; self.count = count; self.status = status }
        }
    }

    public struct Push: Sendable {
        public var type: String?
        /// A number or a template (`"{{prio|5}}"`).
        public var priority: String?
        public var expiration: String?
        public var collapseId: String?
        /// YAML: a flow mapping on one line, or block lines (indented as under `push:`'s key).
        public var template: String? = #"{ aps: { alert: "hello" } }"#
        public var templateFile: String?
        /// `push.locales`, YAML as `template`.
        public var locales: String?
        /// `push.broadcast.channels`, one a line.
        public var channels: [String]?
        public var extra: String?
        public init() {}
    }

    public struct Throttle: Sendable {
        public var rate: Int?
        public var deadline: String?
        public var silentOverBudget: String?
        public var silentPerDevicePerHour: Int?
        public var silentRate: Int?
        /// `throttle.frequency_cap`, a YAML flow mapping.
        public var frequencyCap: String?
        public init() {}
    }

    public struct Retry: Sendable {
        public var maxAttempts: Int?
        public var maxElapsed: String?
        public init() {}
    }

    public struct Reports: Sendable {
        /// Relative to `jobs/`; nil: herald's `../reports/<campaign>`.
        public var dir: String?
        public var compress: Bool?
        public init() {}
    }

    public struct State: Sendable {
        /// Relative to `jobs/`; nil: herald's `../state/<campaign>.sqlite`.
        public var file: String?
        public var networkFilesystem: String?
        public init() {}
    }

    public struct Ops: Sendable {
        public var pingURL: String?
        public var pingTimeout: String?
        public var pushgateway: String?
        public init() {}
    }
}
