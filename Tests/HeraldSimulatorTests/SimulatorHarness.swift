import Crypto
import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// A simulator on an ephemeral loopback port and herald's own libcurl HTTP/2 client pointed at
/// it over TLS. Each `connection()` is a fresh APNsConnection, i.e. a fresh HTTP/2 connection.
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

    func connection(streams: Int = 100, identity: ClientIdentity? = nil, timeoutMs: Int = 10_000) throws -> APNsConnection {
        try APNsConnection(settings: ConnectionSettings(baseURL: "https://127.0.0.1:\(sim.port)", trust: .caPEM(sim.caCertificatePEM),
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

/// A request PushRequest cannot express, sent through the same client (`APNsConnection.transfer`).
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
        let conn = try connection()
        let results = try conn.transfer(count: 1) { (e: CurlEasy, _: Int) throws(DeliveryError) in
            try e.prepare(url: "https://127.0.0.1:\(sim.port)\(raw.path)", payload: raw.body, headerLines: raw.headerLines, method: raw.method)
        }
        return results[0].outcome
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
