import Foundation
import HeraldDelivery
import Logging

/// The pings a cron monitor waits for (`ops.ping_url`, `--ping-url`), in healthchecks.io's
/// convention (https://healthchecks.io/docs/http_api/): `<url>/start` once a run holds the
/// campaign's lock, and an end ping carrying the run's result as its body (`endpoint(exitCode:)`).
/// A ping that fails is logged and never changes the run: the monitor then reports the run as
/// late or failed, which is what it is for.
///
/// The URL is a secret (anyone holding it can ping the check): logs and errors name its host only.
public struct CronPing: Sendable {
    public let url: String
    /// Tries per ping (a 5xx or no answer is tried again, a second apart; a 4xx is not).
    public var attempts = 3
    public var timeoutSeconds: Double = 10

    public init(url: String, timeoutSeconds: Double = 10) {
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
        self.timeoutSeconds = timeoutSeconds
    }

    /// The run starts.
    public func started(logger: Logger) {
        send(url + "/start", body: "", logger: logger)
    }

    /// The run ended with `exitCode`; `body` says how (the result lines herald prints).
    public func ended(exitCode: Int32, body: String, logger: Logger) {
        send(endpoint(exitCode: exitCode), body: body, logger: logger)
    }

    /// Where the end ping goes. healthchecks.io counts every `/<exit status>` but 0 as a failure,
    /// so only a failure goes there. Exit 75 (another run holds the lock: this one did nothing)
    /// and exit 4 (incomplete, the next run resumes: waiting for a window, a signal, retries
    /// left for later) are not failures, and not a finish either: `/log` records the run and its
    /// result without changing the check, which alerts if no run finishes in time. Exit 6 (an
    /// operator paused or cancelled the campaign) is a person's decision, not a failure: `/log` too.
    public func endpoint(exitCode: Int32) -> String {
        switch exitCode {
        case 0: return url
        case 4, 6, 75: return url + "/log"
        default: return "\(url)/\(exitCode)"
        }
    }

    private var host: String { URL(string: url)?.host ?? "the ping URL" }

    private func send(_ target: String, body: String, logger: Logger) {
        let call = HTTPCall(method: "POST", url: target, headers: ["Content-Type: text/plain; charset=utf-8"],
                            body: Array(body.utf8.prefix(10_000)), timeoutSeconds: timeoutSeconds)
        switch call.perform(attempts: attempts) {
        case .success(let answer) where answer.isSuccess:
            logger.debug("pinged \(host)")
        case .success(let answer) where answer.status < 500:
            logger.warning("cron monitor ping failed: \(host) answered HTTP \(answer.status); the run goes on")
        case .success(let answer):
            logger.warning("cron monitor ping failed after \(attempts) tries: \(host) answered HTTP \(answer.status); the run goes on")
        case .failure(let error):
            logger.warning("cron monitor ping failed after \(attempts) tries: \(error); the run goes on")
        }
    }
}
