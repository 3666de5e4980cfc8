import ArgumentParser
import Dispatch
import Foundation
import HeraldSimulator

struct SimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sim",
        abstract: "Run the APNs simulator: HTTP/2 over TLS on loopback, answering like Apple's servers.",
        discussion: "Prints one line `listening on https://HOST:PORT` when ready; stops on SIGINT or SIGTERM."
    )

    @Option(help: "Address to bind.") var host = "127.0.0.1"
    @Option(help: "Port to bind; 0 picks a free one.") var port = 8443
    @Option(help: "Server certificate (PEM). Without it a CA and certificate are generated.") var cert: String?
    @Option(help: "Server private key (PEM), with --cert.") var key: String?
    @Option(name: .customLong("ca-out"), help: "Write the CA certificate clients must trust to this file.") var caOut: String?
    @Option(name: .customLong("team-id"), help: "Expected JWT issuer (iss).") var teamId: String
    @Option(name: .customLong("key-id"), help: "Expected JWT key id (kid).") var keyId: String
    @Option(name: .customLong("auth-key"), help: "The .p8 key whose public half verifies provider tokens.") var authKey: String?
    @Option(name: .customLong("auth-public-key"), help: "The public key (PEM) that verifies provider tokens.") var authPublicKey: String?
    @Option(name: .customLong("bundle-id"), help: "When set, apns-topic must be this bundle id plus the push type's suffix.") var bundleId: String?
    @Option(help: "Append one NDJSON line per request to this file.") var log: String?
    @Option(name: .customLong("unregistered-prefix"), help: "Tokens starting with this hex answer 410 Unregistered (repeatable).") var unregisteredPrefix: [String] = []
    @Option(name: .customLong("bad-token-prefix"), help: "Tokens starting with this hex answer 400 BadDeviceToken (repeatable).") var badTokenPrefix: [String] = []

    func validate() throws {
        if (authKey == nil) == (authPublicKey == nil) { throw ValidationError("give exactly one of --auth-key or --auth-public-key") }
        if (cert == nil) != (key == nil) { throw ValidationError("--cert and --key go together") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0-65535") }
    }

    func run() throws {
        do {
            let publicPEM: String
            if let authKey {
                publicPEM = try SimulatorCredentials.publicKeyPEM(fromPrivateKeyPEM: try String(contentsOfFile: authKey, encoding: .utf8))
            } else {
                publicPEM = try String(contentsOfFile: authPublicKey!, encoding: .utf8)
            }
            var config = SimulatorConfiguration(teamId: teamId, keyId: keyId, publicKeyPEM: publicPEM)
            config.host = host
            config.port = port
            config.bundleId = bundleId
            config.logPath = log
            config.unregisteredPrefixes = unregisteredPrefix.map { $0.lowercased() }
            config.badTokenPrefixes = badTokenPrefix.map { $0.lowercased() }
            if let cert, let key { config.tls = .files(certificatePEMPath: cert, privateKeyPEMPath: key) }
            let sim = try APNsSimulator.start(config)
            if let caOut {
                let fd = open(caOut, O_CREAT | O_TRUNC | O_WRONLY, 0o644)
                guard fd >= 0 else { throw SimulatorCLIError("cannot write --ca-out \(caOut): \(String(cString: strerror(errno)))") }
                FileHandle(fileDescriptor: fd, closeOnDealloc: true).write(Data(sim.caCertificatePEM.utf8))
            }
            FileHandle.standardOutput.write(Data("listening on https://\(host):\(sim.port)\n".utf8))
            let done = DispatchSemaphore(value: 0)
            var sources: [DispatchSourceSignal] = []
            for sig in [SIGINT, SIGTERM] {
                signal(sig, SIG_IGN)
                let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                s.setEventHandler { done.signal() }
                s.resume()
                sources.append(s)
            }
            done.wait()
            try sim.shutdown()
            let counts = sim.requestLog.statusCounts().sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
            print("stopped after \(sim.requestLog.count) requests (\(counts))")
        } catch {
            FileHandle.standardError.write(Data("herald sim: error: \(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}

struct SimulatorCLIError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
