import Foundation
import HeraldCore
import Synchronization

/// Every request the simulator answered, in answer order, for tests to assert on; optionally
/// mirrored to an NDJSON file. Lock-protected: streams of all connections append concurrently.
///
/// Provider tokens are never stored: `authorization` is reduced to its kid/iss/iat.
public final class SimulatorRequestLog: Sendable {
    /// One answered request.
    public struct Entry: Sendable, Equatable {
        /// Connection number, 1-based in accept order.
        public var connection: Int
        /// HTTP/2 stream ID.
        public var stream: Int
        public var method: String
        public var path: String
        /// The device token from `:path`, as sent, if there was one.
        public var token: String?
        /// `apns-*` headers as sent, and `authorization` redacted to `bearer kid=… iss=… iat=…`.
        public var headers: [String: String]
        public var jwtKid: String?
        public var jwtIss: String?
        public var jwtIat: Int?
        /// The body as received (cut at `SimulatorRequest.bodyKeepLimit`).
        public var body: [UInt8]
        public var status: Int
        public var reason: String?
        /// The `apns-id` answered (echoed or generated).
        public var apnsId: String

        public init(connection: Int, stream: Int, request: SimulatorRequest, verdict: SimulatorVerdict, apnsId: String) {
            self.connection = connection
            self.stream = stream
            self.method = request.method
            self.path = request.path
            self.token = verdict.token
            self.jwtKid = verdict.providerToken?.kid
            self.jwtIss = verdict.providerToken?.iss
            self.jwtIat = verdict.providerToken?.iat
            self.body = request.body
            self.status = verdict.status
            self.reason = verdict.reason?.rawValue
            self.apnsId = apnsId
            var headers = [String: String]()
            for (name, value) in request.headers where name.hasPrefix("apns-") {
                headers[name] = headers[name].map { $0 + ", " + value } ?? value
            }
            if request.header("authorization") != nil {
                headers["authorization"] = "bearer kid=\(jwtKid ?? "?") iss=\(jwtIss ?? "?") iat=\(jwtIat.map(String.init) ?? "?")"
            }
            self.headers = headers
        }
    }

    private struct State {
        var entries: [Entry] = []
        var statusCounts: [Int: Int] = [:]
        var file: FileHandle?
        var fileFailed = false
    }

    private let state: Mutex<State>

    /// An in-memory log, mirrored to `path` as NDJSON when given. The file is appended to, not
    /// truncated: a campaign rehearsed, killed and rerun keeps one log of every request it made.
    public init(path: String? = nil) throws(SimulatorError) {
        var initial = State()
        if let path {
            let fd = open(path, O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw .cannotOpenLog(path: path, detail: String(cString: strerror(errno))) }
            initial.file = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        }
        self.state = Mutex(initial)
    }

    public var count: Int { state.withLock { $0.entries.count } }

    public func entries() -> [Entry] { state.withLock { $0.entries } }

    /// Answers per HTTP status, e.g. `[200: 998, 410: 2]`.
    public func statusCounts() -> [Int: Int] { state.withLock { $0.statusCounts } }

    /// Appends one entry and, with a file, writes its line. FileHandle writes go straight to the
    /// file descriptor, so each line is on disk (in the page cache) before the next request's.
    public func append(_ entry: Entry) {
        let line = entry.ndjsonLine(at: Date())
        state.withLock { state in
            state.entries.append(entry)
            state.statusCounts[entry.status, default: 0] += 1
            if let file = state.file, !state.fileFailed {
                do { try file.write(contentsOf: line) } catch { state.fileFailed = true }
            }
        }
    }

    /// Closes the NDJSON file; later entries are kept in memory only.
    public func close() {
        state.withLock { state in
            try? state.file?.close()
            state.file = nil
        }
    }
}

extension SimulatorRequestLog.Entry {
    /// One NDJSON line (with the trailing newline). Written on bytes with HeraldCore's escaping.
    func ndjsonLine(at time: Date) -> Data {
        var out = [UInt8]()
        out.reserveCapacity(256 + body.count)
        func key(_ k: String) {
            out.append(out.isEmpty ? UInt8(ascii: "{") : UInt8(ascii: ","))
            JSONEscaping.appendQuoted(k, to: &out)
            out.append(UInt8(ascii: ":"))
        }
        func string(_ k: String, _ v: String?) {
            key(k)
            if let v { JSONEscaping.appendQuoted(v, to: &out) } else { out.append(contentsOf: "null".utf8) }
        }
        func number(_ k: String, _ v: Int?) { key(k); out.append(contentsOf: (v.map(String.init) ?? "null").utf8) }
        number("time_ms", Int(time.timeIntervalSince1970 * 1000))
        number("connection", connection)
        number("stream", stream)
        string("method", method)
        string("path", path)
        string("token", token)
        key("headers")
        out.append(UInt8(ascii: "{"))
        for (i, name) in headers.keys.sorted().enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONEscaping.appendQuoted(name, to: &out)
            out.append(UInt8(ascii: ":"))
            JSONEscaping.appendQuoted(headers[name] ?? "", to: &out)
        }
        out.append(UInt8(ascii: "}"))
        string("jwt_kid", jwtKid)
        string("jwt_iss", jwtIss)
        number("jwt_iat", jwtIat)
        string("body", String(decoding: body, as: UTF8.self))
        number("status", status)
        string("reason", reason)
        string("apns_id", apnsId)
        out.append(contentsOf: "}\n".utf8)
        return Data(out)
    }
}
