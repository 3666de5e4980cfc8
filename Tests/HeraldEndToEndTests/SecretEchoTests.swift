import Foundation
import HeraldTestSupport
import Testing

/// Servers that echo a credential back, on the built `herald run`: a webhook answering 403 with
/// the `Authorization` header's token (without its `Bearer`, in any letter case), and a
/// Pushgateway answering 400 with the `user:password@` of its URL. Neither secret reaches stderr,
/// stdout or any file of the reports; what the receiver said is kept as a short excerpt.
extension DeliveryEventsTests {
    static let credential = String(secret.split(separator: " ")[1])

    @Test(arguments: ["exact", "lower", "upper"])
    func aCredentialEchoedByTheServersIsShownNowhere(echo: String) throws {
        let token = switch echo {
        case "lower": Self.credential.lowercased()
        case "upper": Self.credential.uppercased()
        default: Self.credential
        }
        let receiver = try HTTPReceiver(answer: .status(403))
        defer { receiver.stop() }
        receiver.body = "bad auth: \(token)\n" + String(repeating: "x", count: 5_000)
        let gateway = try HTTPReceiver(answer: .status(400))
        defer { gateway.stop() }
        let pushPassword = "pg-Pass-9f2c77"
        gateway.body = "push from Herald:\(pushPassword.uppercased()) refused"
        let name = "events-echo-\(echo)"
        let path = try job(name, count: 10, events: "{ url: \"\(receiver.url)/e\", flush: 1s, headers_env: { Authorization: EVENTS_TOKEN } }")

        let gatewayURL = gateway.url.replacingOccurrences(of: "http://", with: "http://Herald:\(pushPassword)@")
        let r = try herald.run(path, ["--pushgateway", gatewayURL])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(receiver.requests.first?.headers["authorization"] == Self.secret, "the webhook got the credential")
        #expect(gateway.requests.first?.headers["authorization"]?.hasPrefix("Basic ") == true, "the Pushgateway got the credentials")
        #expect(r.stderr.contains("answered HTTP 403: bad auth: [redacted] xxxx"), "\(r.stderr)")
        #expect(r.stderr.contains("HTTP 400: push from [redacted] refused"), "\(r.stderr)")

        var outputs = ["stderr": r.stderr, "stdout": r.stdout]
        let reports = dir.file("reports/\(name)")
        for file in try FileManager.default.contentsOfDirectory(atPath: reports) {
            outputs[file] = String(decoding: try Data(contentsOf: URL(fileURLWithPath: "\(reports)/\(file)")), as: UTF8.self)
        }
        #expect(outputs.count > 4, "the reports were written: \(outputs.keys.sorted())")
        for (what, text) in outputs {
            let folded = text.lowercased()
            #expect(!folded.contains(Self.credential.lowercased()), "the events credential is in \(what)")
            #expect(!folded.contains(pushPassword.lowercased()), "the Pushgateway password is in \(what)")
        }
        let events = try #require((try JSON.object(dir.file("reports/\(name)/summary.json"))["events"] as? [String: Any])?["url"] as? [String: Any])
        let error = try #require(events["error"] as? String)
        #expect(error.hasPrefix("the receiver answered HTTP 403: bad auth: [redacted] x") && error.count < 300, "a short excerpt: \(error)")
    }
}
