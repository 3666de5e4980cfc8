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
