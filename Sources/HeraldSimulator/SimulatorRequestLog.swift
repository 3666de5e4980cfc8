import Foundation
import HeraldCore

/// Every request the simulator received, with counters for tests and a final stats line,
/// optionally mirrored to an NDJSON file. Lock-protected: all connections append concurrently.
///
/// Provider tokens are never stored: `authorization` is reduced to its kid/iss/iat.
public final class SimulatorRequestLog: Sendable {
    /// What became of a request.
    public enum Outcome: String, Sendable {
        /// Processed and answered (possibly after a latency fault).
        case answered
        /// The connection was cut before processing it (`close_mode: before`): not delivered.
        case closedBeforeProcessing = "closed_before_processing"
        /// Processed (delivered, as far as the simulator goes), then the connection was cut
        /// before the answer left (`close_mode: after`): the client cannot know.
        case closedAfterProcessing = "closed_after_processing"
    }

    /// One request.
    public struct Entry: Sendable, Equatable {
        /// Connection number, 1-based in accept order.
        public var connection: Int
        /// HTTP/2 stream ID.
        public var stream: Int
        public var method: String
        public var path: String
        /// `:authority`, if sent.
        public var authority: String?
        /// The device token from `:path`, as sent, if there was one.
        public var token: String?
        /// `apns-*` headers as sent, and `authorization` redacted to `bearer kid=… iss=… iat=…`.
        public var headers: [String: String]
        /// The names of the other header fields (not `apns-*`, not `authorization`), lowercase,
        /// in arrival order: Apple's request table has none, and a client need send none but
        /// `content-length`.
        public var otherHeaderNames: [String]
        public var jwtKid: String?
        public var jwtIss: String?
        public var jwtIat: Int?
        /// The credential that authenticated the request: `certificate` for every request on a
        /// connection that presented a client certificate, `token` when its provider token
        /// verified (whose: `jwtKid`/`jwtIss`), nil otherwise (none, or refused).
        public var auth: String?
        /// The client certificate's subject common name, on a certificate connection.
        public var clientCommonName: String?
        /// The topic the request was checked against (`SimulatorVerdict.topic`), else its `apns-topic`.
        public var topic: String?
        /// The body as received (cut at `SimulatorRequest.bodyKeepLimit`).
        public var body: [UInt8]
        /// Nil when the request was never processed (`closedBeforeProcessing`).
        public var status: Int?
        public var reason: String?
        /// The 410 body's milliseconds.
        public var timestamp: Int?
        /// The `apns-id` answered (echoed or generated); nil when never processed.
        public var apnsId: String?
        /// The `apns-unique-id` answered (APNs sends it in development; the simulator always does).
        public var uniqueId: String?
        public var outcome: Outcome
        /// The injected fault behind this answer: `p429`, `p500`, `p503`, `flaky`, `goaway` (the
        /// answer was followed by GOAWAY), `close_before` or `close_after`; nil for none.
        public var fault: String?

        public init(connection: Int, stream: Int, request: SimulatorRequest, verdict: SimulatorVerdict?, apnsId: String?,
                    outcome: Outcome = .answered, fault: String? = nil, clientCertificate: SimulatorClientCertificate? = nil) {
            self.connection = connection
            self.stream = stream
            self.method = request.method
            self.path = request.path
            self.authority = request.authority
            self.token = verdict?.token ?? request.pathToken.flatMap { $0.isEmpty ? nil : $0 }
            self.jwtKid = verdict?.providerToken?.kid
            self.jwtIss = verdict?.providerToken?.iss
            self.jwtIat = verdict?.providerToken?.iat
            if let clientCertificate {
                self.auth = "certificate"
                self.clientCommonName = clientCertificate.commonName
            } else if verdict?.authenticated == true && verdict?.providerToken != nil {
                self.auth = "token"
            }
            self.topic = verdict?.topic ?? request.header("apns-topic")
            self.body = request.body
            self.status = verdict?.status
            self.reason = verdict?.reason?.rawValue
            self.timestamp = verdict?.timestamp
            self.apnsId = apnsId
            self.outcome = outcome
            self.fault = fault ?? verdict?.fault
            var headers = [String: String]()
            var others: [String] = []
            for (name, value) in request.headers {
                if name.hasPrefix("apns-") {
                    headers[name] = headers[name].map { $0 + ", " + value } ?? value
                } else if name != "authorization" {
                    others.append(name)
                }
            }
            self.otherHeaderNames = others
            if request.header("authorization") != nil {
                headers["authorization"] = "bearer kid=\(jwtKid ?? "?") iss=\(jwtIss ?? "?") iat=\(jwtIat.map(String.init) ?? "?")"
            }
            self.headers = headers
        }
    }

    /// Counters over every request so far.
    public struct Stats: Sendable, Equatable {
        /// Requests received in full (answered or not).
        public var requests = 0
        /// Requests whose answer was sent.
        public var answered = 0
        /// Connections accepted (TLS + h2 negotiated).
        public var connections = 0
        /// Those of them closed since, by either side.
        public var connectionsClosed = 0
        /// Answers per HTTP status, including processed requests whose answer was cut off.
        public var byStatus: [Int: Int] = [:]
        public var byReason: [String: Int] = [:]
        /// Requests per injected fault (see `Entry.fault`).
        public var byFault: [String: Int] = [:]
        /// The most answers, over all connections, held back at once by the latency fault: the
        /// requests a client had in flight while its answers were slow.
        public var peakAwaitingLatency = 0
        /// HTTP/2 PINGs received from clients (not their ACKs of the server's): a client checking
        /// an idle or silent connection. NIOHTTP2Handler answers each with its ACK.
        public var pings = 0
        public init() {}
    }

    /// One PING a client sent.
    public struct Ping: Sendable, Equatable {
        /// The connection's number, as in `Entry.connection`.
        public var connection: Int
        public var time: Date
        public init(connection: Int, time: Date) { self.connection = connection; self.time = time }
    }

    private struct State {
        var entries: [Entry] = []
        var pings: [Ping] = []
        var stats = Stats()
        var fd: Int32 = -1
        var fileFailed = false
        var awaitingLatency = 0
    }

    private let state: Locked<State>
    private let keepsEntries: Bool
    private let writesFile: Bool
    /// When false, `append` is never handed an entry: counting needs none.
    var wantsEntries: Bool { keepsEntries || writesFile }

    /// A log kept in memory (when `keepsEntries`) and mirrored to `path` as NDJSON when given.
    /// The file is appended to, not truncated: a campaign rehearsed, killed and rerun keeps one
    /// log of every request it made.
    public init(path: String? = nil, keepsEntries: Bool = true) throws(SimulatorError) {
        var initial = State()
        if let path {
            let fd = open(path, O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw .cannotOpenLog(path: path, detail: String(cString: strerror(errno))) }
            initial.fd = fd
        }
        self.keepsEntries = keepsEntries
        self.writesFile = path != nil
        self.state = Locked(initial)
    }

    deinit { state.withLock { if $0.fd >= 0 { closeDescriptor($0.fd) } } }

    /// Requests received so far.
    public var count: Int { state.withLock { $0.stats.requests } }

    /// Kept entries in arrival order (empty when entries are not kept in memory).
    public func entries() -> [Entry] { state.withLock { $0.entries } }

    /// Answers per HTTP status, e.g. `[200: 998, 410: 2]`.
    public func statusCounts() -> [Int: Int] { state.withLock { $0.stats.byStatus } }

    public func stats() -> Stats { state.withLock { $0.stats } }

    /// PINGs received so far, in arrival order (empty when entries are not kept in memory). They
    /// are not request lines: the NDJSON file stays one line per request, and its stats line
    /// counts them (`pings`).
    public func pings() -> [Ping] { state.withLock { $0.pings } }

    func pingReceived(connection: Int) {
        let ping = Ping(connection: connection, time: Date())
        state.withLock {
            $0.stats.pings += 1
            if keepsEntries { $0.pings.append(ping) }
        }
    }

    func connectionOpened() { state.withLock { $0.stats.connections += 1 } }
    func connectionClosed() { state.withLock { $0.stats.connectionsClosed += 1 } }
    /// An answer starts (`true`) or stops waiting for the latency fault.
    func awaitingLatency(_ starts: Bool) {
        state.withLock {
            $0.awaitingLatency += starts ? 1 : -1
            $0.stats.peakAwaitingLatency = max($0.stats.peakAwaitingLatency, $0.awaitingLatency)
        }
    }

    /// Counts one request and, when entries are wanted, keeps and writes it. The line goes to the
    /// file with one write(2) before the next request's, so a crash loses at most the line being
    /// written (it is in the page cache, not necessarily on disk: this is a test record).
    func append(status: Int?, reason: APNsReason?, outcome: Outcome, fault: String?, entry: @autoclosure () -> Entry) {
        var line: [UInt8] = []
        var built: Entry?
        if wantsEntries {
            let e = entry()
            if writesFile { line = e.ndjsonLine(at: Date()) }
            built = e
        }
        state.withLock { state in
            state.stats.requests += 1
            if outcome == .answered { state.stats.answered += 1 }
            if let status { state.stats.byStatus[status, default: 0] += 1 }
            if let reason { state.stats.byReason[reason.rawValue, default: 0] += 1 }
            if let fault { state.stats.byFault[fault, default: 0] += 1 }
            if keepsEntries, let built { state.entries.append(built) }
            if state.fd >= 0, !state.fileFailed, !line.isEmpty, !Self.writeAll(state.fd, line) { state.fileFailed = true }
        }
    }

    /// Appends an entry as given (tests of the log itself).
    public func append(_ entry: Entry) {
        append(status: entry.status, reason: entry.reason.map { APNsReason($0) }, outcome: entry.outcome, fault: entry.fault, entry: entry)
    }

    /// Writes the final stats line (`{"stats":{…}}`), when there is a file.
    public func writeStatsLine() {
        state.withLock { state in
            guard state.fd >= 0, !state.fileFailed else { return }
            if !Self.writeAll(state.fd, state.stats.ndjsonLine(at: Date())) { state.fileFailed = true }
        }
    }

    /// Closes the NDJSON file; later entries are counted (and kept in memory) only.
    public func close() {
        state.withLock { state in
            if state.fd >= 0 { closeDescriptor(state.fd) }
            state.fd = -1
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += n
            }
            return true
        }
    }
}

/// close(2), out of reach of `SimulatorRequestLog.close()`'s name.
private func closeDescriptor(_ fd: Int32) { _ = close(fd) }
