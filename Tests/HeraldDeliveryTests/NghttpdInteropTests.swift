import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldSimulator
import HeraldTestSupport
import Testing
import X509

/// The sender's connection against a second, independent HTTP/2 server: nghttp2's own `nghttpd`
/// (Debian's nghttp2-server) over TLS on 127.0.0.1, so herald's engine is not only ever checked
/// against the simulator it was written beside (swift-nio-http2). `--echo-upload` makes nghttpd
/// answer every POST with 200 and the body it received; nghttpd knows nothing of APNs, so its
/// answers carry no apns-id. With `-v` it prints every frame it receives, an independent count of
/// the requests that arrived.
@Suite(.serialized) struct NghttpdInteropTests {
    static let binary = ["/usr/sbin/nghttpd", "/usr/bin/nghttpd"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let installed = Prerequisite(binary != nil, "nghttpd (apt-get install -y nghttp2-server) for the interop test")

    /// A running nghttpd and the CA its certificate for 127.0.0.1 chains to.
    final class Server {
        let process = Process()
        let port: Int
        let caFile: String
        let framesFile: String
        let dir = TemporaryDirectory("nghttpd")

        /// `echo`: answer POSTs with 200 (`--echo-upload`); without it nghttpd looks the path up in
        /// an empty document root and answers 404.
        init(echo: Bool, maxStreams: Int) throws {
            let ca = try SimulatorCertificateAuthority(commonName: "nghttpd test CA")
            let leaf = try ca.issueServerCertificate(names: [.ipAddress(.init(contentBytes: [127, 0, 0, 1]))])
            let certificate = try dir.write("server.pem", leaf.certificatePEM)
            let key = try dir.write("server.key", leaf.privateKeyPEM)
            caFile = try dir.write("ca.pem", ca.certificatePEM)
            let htdocs = dir.file("htdocs")
            try FileManager.default.createDirectory(atPath: htdocs, withIntermediateDirectories: true)
            framesFile = dir.file("frames.log")
            _ = FileManager.default.createFile(atPath: framesFile, contents: nil)
            port = try FreePort.next()
            process.executableURL = URL(fileURLWithPath: NghttpdInteropTests.binary ?? "/usr/sbin/nghttpd")
            process.arguments = ["-v", "-a", "127.0.0.1", "-d", htdocs, "-m", String(maxStreams)] + (echo ? ["--echo-upload"] : [])
                + [String(port), key, certificate]
            // To a file, not a pipe: -v writes several lines per frame, and a pipe nobody reads
            // would fill and stall the server.
            process.standardOutput = FileHandle(forWritingAtPath: framesFile)
            process.standardError = process.standardOutput
            try process.run()
            let port = self.port
            guard waitUntil(timeout: 10, { Self.accepts(port) }) else {
                stop()
                throw TestSupportError("nghttpd did not listen on 127.0.0.1:\(port): \(frames())")
            }
        }

        /// SIGKILL: nghttpd is started from a test thread whose signal mask it inherits, with
        /// SIGTERM blocked, so `terminate()` would wait forever. Nothing is lost: `-v` output is
        /// written frame by frame.
        func stop() {
            guard process.processIdentifier != 0 else { return }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }

        /// What nghttpd printed (`-v`: every frame, received and sent).
        func frames() -> String { (try? String(contentsOfFile: framesFile, encoding: .utf8)) ?? "" }

        /// Request HEADERS nghttpd received (`recv HEADERS frame`, each on a new stream: no
        /// trailers are sent).
        func requestsReceived() -> Int {
            frames().components(separatedBy: "\n").filter { $0.contains("recv HEADERS frame") }.count
        }

        private static func accepts(_ port: Int) -> Bool {
            guard let (fd, _) = try? LoopbackSocket.bound(listening: false, what: "probe") else { return false }
            defer { close(fd) }
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = UInt16(port).bigEndian
            return withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
        }
    }

    static func sender(_ server: Server, streams: Int, connections: Int, destination: PushDestination = .devices) throws -> APNsSender {
        let settings = ConnectionSettings(baseURL: "https://127.0.0.1:\(server.port)", trust: .caFile(server.caFile), maxStreams: streams)
        return try APNsSender(settings: settings, connections: connections, token: nil, destination: destination)
    }

    /// Every result once, each a 200 over HTTP/2, and no stray result after the last.
    static func expectEachAnsweredOnce(_ results: [PushResult], _ count: Int, status: Int, _ sender: APNsSender) {
        #expect(results.count == count, "\(results.count) results for \(count) requests")
        #expect(results.map(\.index).sorted() == Array(1...count), "each request is answered exactly once")
        let wrong = results.filter { $0.outcome.status != status || $0.httpVersion != 20 }
        #expect(wrong.isEmpty, "\(wrong.count) not \(status) over HTTP/2, e.g. \(wrong.prefix(3).map { "\($0.outcome)" })")
        #expect(sender.results(timeout: 0.5).isEmpty, "no request is answered twice")
    }

    @Test(.enabled(if: installed.runs, installed.skipReason))
    func devicePushesOnManyStreamsAreEachAnsweredOnce() throws {
        try Self.installed.require()
        let server = try Server(echo: true, maxStreams: 100)
        defer { server.stop() }
        let count = 600
        let sender = try Self.sender(server, streams: 100, connections: 2)
        let results = StreamingSenderTests.stream(sender, StreamingSenderTests.jobs(1...count), ahead: 300)
        Self.expectEachAnsweredOnce(results, count, status: 200, sender)
        #expect(Set(results.map(\.connection)) == [1, 2], "both connections carried requests")
        #expect(results.allSatisfy { if case .answered(_, let id, _, _) = $0.outcome { id == nil } else { false } },
                "nghttpd sends no apns-id and herald invents none")
        sender.shutdown()
        server.stop()
        #expect(server.requestsReceived() == count, "nghttpd received each request once")
        #expect(server.frames().components(separatedBy: "\n").filter { $0.hasSuffix(":status: 200") }.count == count,
                "and answered each once")
        #expect(sender.counters.connectionsOpened == 2)
    }

    @Test(.enabled(if: installed.runs, installed.skipReason))
    func broadcastsAreEachAnsweredOnce() throws {
        try Self.installed.require()
        let server = try Server(echo: true, maxStreams: 100)
        defer { server.stop() }
        let count = 200
        let sender = try Self.sender(server, streams: 100, connections: 1, destination: .broadcasts)
        let results = StreamingSenderTests.stream(sender, StreamingSenderTests.jobs(1...count), ahead: 200)
        Self.expectEachAnsweredOnce(results, count, status: 200, sender)
        sender.shutdown()
        server.stop()
        let frames = server.frames()
        #expect(server.requestsReceived() == count)
        #expect(frames.contains(":path: /4/broadcasts/apps/\(StreamingSenderTests.bundle)") && !frames.contains(":path: /3/device/"),
                "broadcasts go to the app's broadcast path")
    }

    /// Without --echo-upload nghttpd answers 404 (no such file): each answer is still recorded
    /// once, with nghttpd's status, not taken for a delivery. All of them leave at once on the
    /// one connection (the worker connects before it takes work), so none is held back when the
    /// first 404 makes the sender stop starting requests.
    @Test(.enabled(if: installed.runs, installed.skipReason))
    func answersOtherThan200AreRecordedAsSent() throws {
        try Self.installed.require()
        let server = try Server(echo: false, maxStreams: 100)
        defer { server.stop() }
        let count = 20
        let sender = try Self.sender(server, streams: 50, connections: 1)
        let results = StreamingSenderTests.stream(sender, StreamingSenderTests.jobs(1...count), ahead: count)
        Self.expectEachAnsweredOnce(results, count, status: 404, sender)
        sender.shutdown()
    }
}
