internal import CHTTP2Client
import Crypto
import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// A simulator on an ephemeral loopback port and herald's own HTTP/2 client (CHTTP2Client, as the
/// sender connects: `Nghttp2Endpoint`, `FieldBlock`) pointed at it over TLS. Each `connection()`
/// is a fresh `TestConnection`, i.e. a fresh HTTP/2 connection.
struct SimulatorHarness {
    static let bundle = "com.example.app"
    let key = TestKey()
    let sim: APNsSimulator

    /// A simulator that verifies `key`'s tokens, for `bundle`, shaped by `configure`.
    init(_ configure: (inout SimulatorConfiguration) -> Void = { _ in }) throws {
        var config = SimulatorConfiguration(teamId: TestKey.teamId, keyId: TestKey.keyId, publicKeyPEM: key.publicKeyPEM)
        config.bundleId = Self.bundle
        configure(&config)
        sim = try APNsSimulator.start(config)
    }

    /// A certificate-authentication simulator trusting `clientCA` for client certificates.
    init(clientCA: String, _ configure: (inout SimulatorConfiguration) -> Void = { _ in }) throws {
        var config = SimulatorConfiguration(authentication: .clientCertificate(caPEMPath: clientCA))
        config.bundleId = Self.bundle
        configure(&config)
        sim = try APNsSimulator.start(config)
    }

    func shutdown() { try? sim.shutdown() }

    func connection(streams: Int = 100, identity: ClientIdentity? = nil, timeoutMs: Int = 10_000) throws -> TestConnection {
        try TestConnection(settings: ConnectionSettings(baseURL: "https://127.0.0.1:\(sim.port)", trust: .caPEM(sim.caCertificatePEM),
                                                        identity: identity, maxStreams: streams, requestTimeoutMs: timeoutMs))
    }

    /// A provider token signed by herald's own signer (`ProviderToken`), issued at `issuedAt`.
    func jwt(key signingKey: TestKey? = nil, teamId: String = TestKey.teamId, keyId: String = TestKey.keyId,
             issuedAt: Date = Date()) throws -> String {
        try ProviderToken(privateKeyPEM: (signingKey ?? key).privateKeyPEM, source: "test", teamId: teamId, keyId: keyId,
                          clock: { issuedAt }).current()
    }

    /// Sends `requests` on one new connection.
    func send(_ requests: [PushRequest], authorization: String?, streams: Int = 100) throws -> [PushResult] {
        try connection(streams: streams).send(requests, authorization: authorization).sorted { $0.index < $1.index }
    }

    /// One request on one new connection; its outcome.
    func send(_ request: PushRequest, authorization: String?) throws -> PushOutcome {
        try send([request], authorization: authorization)[0].outcome
    }
}

/// Requests as tests need them.
enum Push {
    static func token(_ i: Int, prefix: String = "") -> String {
        prefix + String(repeating: "0", count: max(0, 64 - prefix.count - String(i, radix: 16).count)) + String(i, radix: 16)
    }

    static func apnsId(_ i: Int) -> String { String(format: "00000000-0000-4000-8000-%012x", i) }

    /// A request that passes every check (with a valid token), changed by `change`.
    static func request(_ i: Int = 1, prefix: String = "", _ change: (inout PushRequest) -> Void = { _ in }) -> PushRequest {
        var r = PushRequest(token: DeviceToken(trustedCanonical: token(i, prefix: prefix)), payload: Array(#"{"aps":{"alert":"hi \#(i)"}}"#.utf8),
                            apnsId: apnsId(i), topic: SimulatorHarness.bundle, pushType: .alert, priority: 10, collapseId: "herald:test")
        change(&r)
        return r
    }

    static func many(_ n: Int, prefix: String = "") -> [PushRequest] { (1...n).map { request($0, prefix: prefix) } }
}

/// A request PushRequest cannot express (another method, path or header set), sent as a one-off
/// HTTP/2 request (`HTTPCall`, libcurl).
struct RawRequest {
    var method: String?
    var path: String
    var headerLines: [String]
    var body: [UInt8]

    static func valid(authorization: String) -> RawRequest {
        RawRequest(method: nil, path: "/3/device/" + Push.token(1),
                   headerLines: ["authorization: bearer \(authorization)", "apns-topic: \(SimulatorHarness.bundle)",
                                 "apns-push-type: alert", "content-type: application/json", "Expect:", "Accept:"],
                   body: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
    }
}

extension SimulatorHarness {
    func send(raw: RawRequest) throws -> PushOutcome {
        var call = HTTPCall(method: raw.method ?? "POST", url: "https://127.0.0.1:\(sim.port)\(raw.path)", headers: raw.headerLines, body: raw.body)
        call.trust = .caPEM(sim.caCertificatePEM)
        switch call.perform() {
        case .success(let answer):
            return ResponseBody.outcome(status: answer.status, apnsId: answer.headers["apns-id"]) { answer.body }
        case .failure(let error):
            return .transportFailure(TransportFailure(.connectionLost, "\(error)"))
        }
    }
}

/// An HTTP/2 client of the simulator that sends each batch with the `authorization` the test
/// chooses (a forged or hand-made token included) and waits for it: the simulator's behaviour per
/// connection (a token changed on it, streams refused, GOAWAY, a cut) is what these tests look at.
/// It keeps one connection while the server keeps it; after a GOAWAY or a loss the next request
/// opens a new one, and a request the server never processed (refused, or never sent under a
/// GOAWAY) is sent again there, as an HTTP client may (RFC 9113 §8.7). A request whose connection
/// died under it comes back as a transport failure.
final class TestConnection {
    private let settings: ConnectionSettings
    private let endpoint: Nghttp2Endpoint
    private var handle: OpaquePointer?
    private var fields = FieldBlock()
    private var generation = 0
    private var lastAuthorization: String??

    init(settings: ConnectionSettings) throws {
        self.settings = settings
        endpoint = try Nghttp2Endpoint(settings)
    }

    deinit { if let handle { h2_close(handle) } }

    func send(_ requests: [PushRequest], authorization: String?) throws -> [PushResult] {
        if lastAuthorization != .some(authorization) { generation += 1; lastAuthorization = .some(authorization) }
        var results: [PushResult] = []
        var pending = Array(requests.indices)
        for _ in 0..<5 where !pending.isEmpty {
            if let h = handle, h2_goaway(h, nil, nil, nil) != 0 { h2_close(h); handle = nil }
            if handle == nil {
                switch endpoint.connect() {
                case .success(let h): handle = h
                case .failure(let f):
                    return (results + pending.map { PushResult(index: $0, outcome: .transportFailure(f), httpVersion: 0) }).sorted { $0.index < $1.index }
                }
            }
            let (done, again) = try batch(requests, pending, authorization: authorization)
            results += done
            pending = again
        }
        results += pending.map { PushResult(index: $0, outcome: .transportFailure(TransportFailure(.neverSent, "refused five times")), httpVersion: 0) }
        return results.sorted { $0.index < $1.index }
    }

    /// Sends `indices` on the current connection: their results, and those never processed.
    private func batch(_ requests: [PushRequest], _ indices: [Int], authorization: String?) throws -> ([PushResult], [Int]) {
        guard let handle else { return ([], indices) }
        var results: [PushResult] = []
        var again: [Int] = []
        var next = 0, open = 0
        var err = [CChar](repeating: 0, count: 512)
        let deadline = Date().addingTimeInterval(Double(settings.requestTimeoutMs) / 1000 + 5)
        while next < indices.count || open > 0 {
            while next < indices.count && open < settings.maxStreams {
                let i = indices[next]
                let r = requests[i]
                fields.prepare(r, for: .devices, key: FieldBlock.SharedKey(generation: generation, topic: r.topic, pushType: r.pushType, priority: r.priority,
                                                                          collapseId: r.collapseId, expiration: r.expiration), jwt: authorization)
                let id = fields.bytes.withUnsafeBufferPointer { f in
                    r.payload.withUnsafeBufferPointer { b in h2_submit(handle, f.baseAddress, f.count, b.baseAddress, b.count, UInt64(i)) }
                }
                if id > 0 { open += 1 } else { again.append(i) }
                next += 1
            }
            let state = h2_turn(handle, &err, err.count)
            var count = 0
            if let answers = h2_answers(handle, &count), count > 0 {
                for k in 0..<count {
                    let a = answers[k]
                    open -= 1
                    if a.complete != 0 {
                        results.append(PushResult(index: Int(a.cookie), outcome: Nghttp2Worker.answered(a, sent: nil)))
                    } else if a.not_sent != 0 || a.reset_code == 7 {
                        again.append(Int(a.cookie))
                    } else {
                        results.append(PushResult(index: Int(a.cookie), outcome: .transportFailure(TransportFailure(.connectionLost, "no answer")), httpVersion: 0))
                    }
                }
                h2_clear_answers(handle)
            }
            if state != 0 {
                // The connection ended and answered every open stream; the rest goes on a new one.
                h2_close(handle)
                self.handle = nil
                return (results, again + indices[next...])
            }
            if Date() > deadline { throw TransportFailure(.timedOut, "no answer from the simulator in time") }
            var fds = [pollfd(fd: h2_fd(handle), events: Int16(POLLIN) | (h2_wants_write(handle) != 0 ? Int16(POLLOUT) : 0), revents: 0)]
            _ = poll(&fds, 1, 50)
        }
        return (results, again)
    }
}

extension PushOutcome {
    var status: Int? { if case .answered(let s, _, _, _) = self { return s } else { return nil } }
    var reason: String? { if case .answered(_, _, let r, _) = self { return r?.rawValue } else { return nil } }
    var timestamp: Int64? { if case .answered(_, _, _, let t) = self { return t } else { return nil } }
    var apnsId: String? { if case .answered(_, let id, _, _) = self { return id } else { return nil } }
    var isTransportFailure: Bool { if case .transportFailure = self { return true } else { return false } }
}

/// JWTs made with swift-crypto, independently of herald's signer, for shapes it never makes.
enum HandMadeJWT {
    static func base64url(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func make(key: P256.Signing.PrivateKey, header: String, claims: String) throws -> String {
        let input = base64url(Data(header.utf8)) + "." + base64url(Data(claims.utf8))
        return input + "." + base64url(try key.signature(for: Data(input.utf8)).rawRepresentation)
    }
}

extension TestKey {
    var cryptoKey: P256.Signing.PrivateKey { get throws { try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM) } }
}
