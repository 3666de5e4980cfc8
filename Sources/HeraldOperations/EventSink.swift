import Foundation
import HeraldCore
import HeraldDelivery

/// Where a batch of events (NDJSON bytes) goes: a webhook or a file.
protocol EventSink: AnyObject {
    /// The sink's name in the state file and the summary: `url` or `file`.
    var key: String { get }
    /// How messages name it (never the URL's path or query: they may hold a secret).
    var label: String { get }
    func deliver(_ body: [UInt8]) -> EventSinkResult
}

enum EventSinkResult: Equatable {
    case delivered
    /// Try the same batch again later (a 5xx, a timeout, no connection, a full disk).
    case retry(String)
    /// Stop delivering to this sink for the rest of the run (a 4xx, a file that cannot be written).
    case stop(String)
}

/// Why `events` cannot start: the job names something the machine does not have.
public enum EventsError: Error, CustomStringConvertible, Equatable {
    case missingVariable(header: String, variable: String)
    case unusableValue(header: String, variable: String)
    case file(path: String, message: String)

    public var description: String {
        switch self {
        case .missingVariable(let header, let variable):
            return "events.headers_env.\(header): the environment variable \(variable) is not set (it holds the header's value)"
        case .unusableValue(let header, let variable):
            return "events.headers_env.\(header): the value of \(variable) contains a line break or a control character, which a header cannot carry"
        case .file(let path, let message):
            return "events.file \(path): \(message)"
        }
    }
}

/// `events.url`: each batch POSTed as `application/x-ndjson` over one kept connection.
final class WebhookSink: EventSink {
    let key = "url"
    let label: String
    private let url: String
    private let headers: [String]
    /// The header values, cut (with the URL's secrets) out of anything the receiver says.
    private let secrets: [String]
    private let timeout: Double
    private let session = HTTPSession()

    /// Reads the header values from `environment`.
    init(spec: EventsSpec, url: String, environment: [String: String]) throws(EventsError) {
        var headers = ["Content-Type: application/x-ndjson"]
        var secrets: [String] = []
        for h in spec.headersEnv {
            guard let value = environment[h.variable] else { throw .missingVariable(header: h.name, variable: h.variable) }
            guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw .unusableValue(header: h.name, variable: h.variable)
            }
            headers.append("\(h.name): \(value)")
            if !value.isEmpty { secrets.append(value) }
        }
        self.url = url
        self.headers = headers
        self.secrets = secrets
        timeout = Double(spec.timeout)
        label = "events.url (\(URL(string: url)?.host ?? "the receiver"))"
    }

    func deliver(_ body: [UInt8]) -> EventSinkResult {
        var call = HTTPCall(method: "POST", url: url, headers: headers, body: body, timeoutSeconds: timeout)
        call.secretHeaderValues = secrets
        switch session.perform(call) {
        case .failure(let error):
            return .retry("\(error)")
        case .success(let answer):
            if answer.isSuccess { return .delivered }
            // What it said goes to the log, stdout and summary.json: a short excerpt, secrets cut.
            let said = call.redaction.excerpt(answer.body)
            let what = "the receiver answered HTTP \(answer.status)" + (said.isEmpty ? "" : ": \(said)")
            // 408 and 429 say "later", like a 5xx; any other 4xx (a bad token, a wrong path, a
            // rejected body) will be answered the same way however often it is sent.
            if answer.status >= 500 || answer.status == 408 || answer.status == 429 { return .retry(what) }
            return .stop(what)
        }
    }
}

/// `events.file`: each batch appended to an NDJSON file and flushed to the disk (fsync) before it
/// counts as delivered. Created 0600: events carry device tokens.
final class FileSink: EventSink {
    let key = "file"
    let label: String
    private let path: String
    private let fd: Int32

    init(path: String) throws(EventsError) {
        self.path = path
        label = "events.file \(path)"
        let dir = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: dir.isEmpty ? "." : dir, withIntermediateDirectories: true)
        } catch {
            throw .file(path: path, message: "cannot create its folder: \(error.localizedDescription)")
        }
        fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .file(path: path, message: String(cString: strerror(errno))) }
        try cutUnfinishedLine()
    }

    deinit { close(fd) }

    /// A crash in the middle of an append can leave a line without its end. Its event is still in
    /// the outbox (a batch counts only once it is on the disk) and is written again whole, so the
    /// cut line is removed instead of joined to the next one.
    private func cutUnfinishedLine() throws(EventsError) {
        var end = lseek(fd, 0, SEEK_END)
        guard end > 0 else { return }
        var last: UInt8 = 0
        guard pread(fd, &last, 1, end - 1) == 1 else { throw .file(path: path, message: String(cString: strerror(errno))) }
        guard last != UInt8(ascii: "\n") else { return }
        var chunk = [UInt8](repeating: 0, count: 4096)
        var keep: off_t = 0
        search: while end > 0 {
            let start = max(0, end - off_t(chunk.count))
            let n = pread(fd, &chunk, Int(end - start), start)
            guard n > 0 else { break }
            for i in stride(from: n - 1, through: 0, by: -1) where chunk[i] == UInt8(ascii: "\n") {
                keep = start + off_t(i) + 1
                break search
            }
            end = start
        }
        guard ftruncate(fd, keep) == 0 else { throw .file(path: path, message: String(cString: strerror(errno))) }
    }

    func deliver(_ body: [UInt8]) -> EventSinkResult {
        let before = lseek(fd, 0, SEEK_END)
        var written = 0
        var failure: Int32 = 0
        body.withUnsafeBytes { raw in
            while written < raw.count {
                let n = write(fd, raw.baseAddress! + written, raw.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                written += n
            }
            if fsync(fd) != 0 { failure = errno }
        }
        guard failure != 0 else { return .delivered }
        // Nothing half-written stays: the batch is appended again whole on the next try.
        if before >= 0 { _ = ftruncate(fd, before) }
        let what = "\(path): \(String(cString: strerror(failure)))"
        switch failure {
        case ENOSPC, EDQUOT, EIO, EINTR, EAGAIN: return .retry(what)
        default: return .stop(what)
        }
    }
}
