import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing

/// Certificate authentication (`apns.certificate`): the job's .p12 or PEM files are checked with
/// OpenSSL, handed to libcurl as blobs, and presented to the simulator in client-certificate mode.
@Suite(.serialized) struct CertificateAuthTests {
    static let bundle = "com.example.app"
    let dir = TemporaryDirectory("cert-auth")

    struct Fixture {
        let ca: SimulatorCertificateAuthority
        let sim: APNsSimulator
        init(dir: TemporaryDirectory) throws {
            ca = try SimulatorCertificateAuthority(commonName: "test client CA")
            var config = SimulatorConfiguration(authentication: .clientCertificate(caPEMPath: try dir.write("client-ca.pem", ca.certificatePEM)))
            config.bundleId = CertificateAuthTests.bundle
            sim = try APNsSimulator.start(config)
        }
        func settings(_ identity: ClientIdentity?) -> ConnectionSettings {
            ConnectionSettings(baseURL: "https://127.0.0.1:\(sim.port)", trust: .caPEM(sim.caCertificatePEM), identity: identity, maxStreams: 50)
        }
    }

    static func requests(_ n: Int) -> [PushRequest] {
        (0..<n).map { i in
            PushRequest(token: try! DeviceToken.normalize(String(format: "%064x", i + 1)).get(), payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8),
                        apnsId: String(format: "00000000-0000-5000-8000-%012x", i), topic: bundle, pushType: .alert, priority: 10)
        }
    }

    @Test(arguments: ["p12", "legacy p12", "pem", "encrypted pem"])
    func aLoadedCertificateSendsWithoutAuthorization(_ form: String) throws {
        let f = try Fixture(dir: dir)
        defer { try? f.sim.shutdown() }
        let files = try ClientCertificateFiles(issuedBy: f.ca, name: "app", in: dir)
        let env = ["P12_PASSWORD": files.password]
        let spec: CertificateAuthSpec = switch form {
        case "p12": .p12(path: files.p12, passwordEnv: "P12_PASSWORD")
        case "legacy p12": .p12(path: files.legacyP12, passwordEnv: "P12_PASSWORD")
        case "pem": .pem(certificatePath: files.certificate, keyPath: files.key, passwordEnv: nil)
        default: .pem(certificatePath: files.certificate, keyPath: files.encryptedKey, passwordEnv: "P12_PASSWORD")
        }
        let identity = try ClientIdentity.load(spec, environment: env)
        #expect(identity.expiresAt.map { $0 > Date() } == true)
        #expect(!"\(identity)".contains(files.password) && !String(reflecting: identity).contains(files.password))
        #expect(ConnectionProbe.run(f.settings(identity)) == .accepted)
        let results = try APNsSender(settings: f.settings(identity), connections: 1, token: nil).send(Self.requests(20))
        #expect(results.allSatisfy { $0.outcome.isOK }, "\(results.map(\.outcome))")
        let log = f.sim.requestLog.entries().filter { $0.path.hasPrefix("/3/device/") }
        #expect(log.count == 20, "the probe's HEAD / is not a push")
        #expect(log.allSatisfy { $0.headers["authorization"] == nil }, "no authorization header with a certificate")
    }

    @Test func aCertificateFromAnotherCAIsRefusedByTheProbe() throws {
        let f = try Fixture(dir: dir)
        defer { try? f.sim.shutdown() }
        let stranger = try SimulatorCertificateAuthority(commonName: "someone else's CA")
        let files = try ClientCertificateFiles(issuedBy: stranger, name: "intruder", in: dir)
        let identity = try ClientIdentity.load(.pem(certificatePath: files.certificate, keyPath: files.key, passwordEnv: nil), environment: [:])
        let outcome = ConnectionProbe.run(f.settings(identity))
        guard case .refused(let why) = outcome else { Issue.record("expected a refusal, got \(outcome)"); return }
        #expect(why.contains("alert"), "\(why)")
        // Without any certificate the server refuses too; neither probe got a request through.
        #expect(ConnectionProbe.run(f.settings(nil)) != .accepted)
        #expect(f.sim.requestLog.count == 0)
    }

    @Test func wrongOrMissingPasswordsNameTheJobFieldAndNeverThePassword() throws {
        let ca = try SimulatorCertificateAuthority()
        let files = try ClientCertificateFiles(issuedBy: ca, name: "app", in: dir)
        let wrong = "not-the-password-123"
        let cases: [(CertificateAuthSpec, [String: String], String)] = [
            (.p12(path: files.p12, passwordEnv: "PW"), ["PW": wrong], "apns.certificate.password_env: the password in $PW does not open"),
            (.p12(path: files.p12, passwordEnv: nil), [:], "apns.certificate.p12_file"),
            (.p12(path: files.p12, passwordEnv: "PW"), [:], "apns.certificate.password_env: environment variable PW is not set"),
            (.pem(certificatePath: files.certificate, keyPath: files.encryptedKey, passwordEnv: "PW"), ["PW": wrong], "wrong password"),
            (.pem(certificatePath: files.certificate, keyPath: files.encryptedKey, passwordEnv: nil), [:], "name the variable holding its password"),
        ]
        for (spec, env, expected) in cases {
            do {
                _ = try ClientIdentity.load(spec, environment: env)
                Issue.record("\(spec) loaded")
            } catch {
                #expect(error.description.contains(expected), "\(error.description)")
                #expect(!error.description.contains(wrong) && !error.description.contains(files.password))
            }
        }
    }

    @Test func filesThatAreNotACertificateOrDoNotMatchAreClearErrors() throws {
        let ca = try SimulatorCertificateAuthority()
        let a = try ClientCertificateFiles(issuedBy: ca, name: "a", in: dir)
        let b = try ClientCertificateFiles(issuedBy: ca, name: "b", in: dir)
        #expect(throws: ClientCertificateError.keyMismatch(certificate: a.certificate, key: b.key)) {
            try ClientIdentity.load(.pem(certificatePath: a.certificate, keyPath: b.key, passwordEnv: nil), environment: [:])
        }
        #expect(throws: ClientCertificateError.notPKCS12(path: a.certificate)) {
            try ClientIdentity.load(.p12(path: a.certificate, passwordEnv: nil), environment: [:])
        }
        #expect(throws: ClientCertificateError.notPEMCertificate(path: a.key)) {
            try ClientIdentity.load(.pem(certificatePath: a.key, keyPath: a.key, passwordEnv: nil), environment: [:])
        }
        #expect(throws: ClientCertificateError.unreadable(field: "p12_file", path: dir.file("none.p12"), why: "no such file")) {
            try ClientIdentity.load(.p12(path: dir.file("none.p12"), passwordEnv: nil), environment: [:])
        }
        // A certificate past its notAfter is refused before any connection.
        let later = Date().addingTimeInterval(400 * 86_400)
        #expect {
            try ClientIdentity.load(.pem(certificatePath: a.certificate, keyPath: a.key, passwordEnv: nil), environment: [:], now: later)
        } throws: { ($0 as? ClientCertificateError)?.description.contains("expired on") == true }
    }
}

extension PushOutcome {
    var isOK: Bool { if case .answered(200, _, _, _) = self { return true } else { return false } }
}
