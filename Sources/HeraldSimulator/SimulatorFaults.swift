import HeraldCore

/// Faults the simulator injects into requests that pass validation, and into connections.
///
/// Random choices are seeded and derived from the request itself (see `FaultDice`), not from a
/// shared random stream, so the same audience gets the same faults on every rehearsal whatever
/// the number of connections or streams.
public struct SimulatorFaults: Sendable, Equatable {
    /// What happens to the request that triggers `closeAfter`.
    public enum CloseMode: String, Sendable, CaseIterable {
        /// The connection is cut before the request is processed: nothing was delivered.
        case before
        /// The request is processed (logged with its verdict, as if delivered), then the connection
        /// is cut before the answer leaves: the client cannot know. herald must resend it with the
        /// same `apns-id` and collapse id.
        case after
    }

    /// Probability that a valid request is answered 429 `TooManyRequests`.
    public var p429: Double
    /// Probability of 500 `InternalServerError`.
    public var p500: Double
    /// Probability of 503 `ServiceUnavailable`.
    public var p503: Double
    /// Seed of every random choice (faults and jitter).
    public var seed: UInt64
    /// Every answer waits this long.
    public var latencyMs: Int
    /// Plus a seeded random extra of 0 to this many milliseconds.
    public var latencyJitterMs: Int
    /// After answering its Nth request a connection sends GOAWAY (NO_ERROR, debug data
    /// `{"reason":"<goawayReason>"}`, as APNs does) and closes once its open streams are answered.
    /// Nil: never.
    public var goawayAfter: Int?
    /// The `reason` in the GOAWAY debug data.
    public var goawayReason: APNsReason
    /// The Nth request on each connection cuts the TCP connection (no GOAWAY, no TLS close_notify,
    /// an RST), before or after processing it per `closeMode`. Nil: never.
    public var closeAfter: Int?
    public var closeMode: CloseMode

    public init(p429: Double = 0, p500: Double = 0, p503: Double = 0, seed: UInt64 = 0,
                latencyMs: Int = 0, latencyJitterMs: Int = 0, goawayAfter: Int? = nil, goawayReason: APNsReason = "Shutdown",
                closeAfter: Int? = nil, closeMode: CloseMode = .after) {
        self.p429 = p429; self.p500 = p500; self.p503 = p503; self.seed = seed
        self.latencyMs = latencyMs; self.latencyJitterMs = latencyJitterMs
        self.goawayAfter = goawayAfter; self.goawayReason = goawayReason
        self.closeAfter = closeAfter; self.closeMode = closeMode
    }

    /// True when some status fault can fire.
    var injectsStatuses: Bool { p429 > 0 || p500 > 0 || p503 > 0 }

    func validate() throws(SimulatorError) {
        for (name, p) in [("p429", p429), ("p500", p500), ("p503", p503)] where !(p.isFinite && p >= 0 && p <= 1) {
            throw .badConfiguration("\(name) must be a probability between 0 and 1, not \(p)")
        }
        guard p429 + p500 + p503 <= 1 + 1e-9 else {
            throw .badConfiguration("p429 + p500 + p503 must not exceed 1 (they are exclusive), not \(p429 + p500 + p503)")
        }
        guard latencyMs >= 0, latencyJitterMs >= 0 else {
            throw .badConfiguration("latency and jitter must be 0 or more milliseconds")
        }
        if let n = goawayAfter, n < 1 { throw .badConfiguration("goaway after must be at least 1 request, not \(n)") }
        if let n = closeAfter, n < 1 { throw .badConfiguration("close after must be at least 1 request, not \(n)") }
        guard !goawayReason.rawValue.isEmpty, goawayReason.rawValue.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) else {
            throw .badConfiguration("the GOAWAY reason must be one word of printable ASCII, not \"\(goawayReason)\"")
        }
    }
}

/// "Fail N times with this status, then succeed" for tokens with a prefix: a token that recovers,
/// to rehearse the sender's retries.
public struct FlakyTokenRule: Sendable, Equatable {
    public var prefix: String
    public var failures: Int
    /// 429, 500 or 503, answered with Apple's reason for it.
    public var status: Int

    public init(prefix: String, failures: Int = 2, status: Int = 503) {
        self.prefix = prefix; self.failures = failures; self.status = status
    }

    /// The statuses a flaky token may answer and the reason each carries.
    public static let reasons: [Int: String] = [429: "TooManyRequests", 500: "InternalServerError", 503: "ServiceUnavailable"]
}

/// Any documented APNs answer, every time, for tokens with a prefix: to rehearse answers no other
/// rule gives, such as the configuration errors that abort a campaign (BadTopic, BadCertificate…).
public struct FixedAnswerRule: Sendable, Equatable {
    public var prefix: String
    /// A reason of Apple's table (APNsReasonTable); the status is the table's.
    public var reason: APNsReason
    public init(prefix: String, reason: APNsReason) { self.prefix = prefix; self.reason = reason }
}

/// Deterministic answers for chosen device tokens, by hex prefix (a whole token is a prefix too,
/// so a list of tokens works). The first matching rule in this order decides: fixed answers,
/// unregistered, expired, bad, not-for-topic, flaky.
public struct SimulatorTokenRules: Sendable, Equatable {
    /// 410 `Unregistered`, with the `timestamp` Apple sends.
    public var unregisteredPrefixes: [String]
    /// 410 `ExpiredToken`, with a `timestamp`.
    public var expiredTokenPrefixes: [String]
    /// 400 `BadDeviceToken` (a token of the other environment, at Apple).
    public var badTokenPrefixes: [String]
    /// 400 `DeviceTokenNotForTopic`.
    public var notForTopicPrefixes: [String]
    public var flaky: [FlakyTokenRule]
    public var answers: [FixedAnswerRule]

    public init(unregisteredPrefixes: [String] = [], expiredTokenPrefixes: [String] = [], badTokenPrefixes: [String] = [],
                notForTopicPrefixes: [String] = [], flaky: [FlakyTokenRule] = [], answers: [FixedAnswerRule] = []) {
        self.answers = answers
        self.unregisteredPrefixes = unregisteredPrefixes
        self.expiredTokenPrefixes = expiredTokenPrefixes
        self.badTokenPrefixes = badTokenPrefixes
        self.notForTopicPrefixes = notForTopicPrefixes
        self.flaky = flaky
    }

    var isEmpty: Bool {
        unregisteredPrefixes.isEmpty && expiredTokenPrefixes.isEmpty && badTokenPrefixes.isEmpty
            && notForTopicPrefixes.isEmpty && flaky.isEmpty && answers.isEmpty
    }

    func validate() throws(SimulatorError) {
        let all = unregisteredPrefixes + expiredTokenPrefixes + badTokenPrefixes + notForTopicPrefixes + flaky.map(\.prefix) + answers.map(\.prefix)
        for p in all where p.isEmpty || !p.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46) }) {
            throw .badConfiguration("token prefix \"\(p)\" must be hex digits")
        }
        for rule in answers where rule.reason.entry == nil {
            throw .badConfiguration("answer for prefix \(rule.prefix): \"\(rule.reason)\" is not a reason in Apple's table")
        }
        for rule in flaky {
            guard rule.failures >= 1 else { throw .badConfiguration("flaky prefix \(rule.prefix): count must be at least 1, not \(rule.failures)") }
            guard FlakyTokenRule.reasons[rule.status] != nil else {
                throw .badConfiguration("flaky prefix \(rule.prefix): status must be 429, 500 or 503, not \(rule.status)")
            }
        }
    }
}
