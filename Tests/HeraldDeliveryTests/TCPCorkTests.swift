import Foundation
import HeraldSimulator
import HeraldTestSupport
@testable import HeraldDelivery
import Testing

/// `TCPCork` on a real TCP connection over 127.0.0.1: the option is set and cleared on the
/// socket, and the bytes written while corked all reach the peer once it is cleared.
@Suite struct TCPCorkTests {
    /// A connected (client, server) pair of TCP sockets on 127.0.0.1.
    func connectedPair() throws -> (Int32, Int32) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &addr) { p in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                try #require(bind(listener, sa, length) == 0)
                try #require(listen(listener, 1) == 0)
                try #require(getsockname(listener, sa, &length) == 0)
            }
        }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try withUnsafePointer(to: &addr) { p in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                try #require(connect(client, sa, length) == 0)
            }
        }
        let server = accept(listener, nil, nil)
        try #require(server >= 0)
        return (client, server)
    }

    @Test func corksAndUncorksTheSocket() throws {
        let (client, server) = try connectedPair()
        defer { close(client); close(server) }
        #expect(TCPCork.isSet(client) == false)
        TCPCork.set(client, true)
        #expect(TCPCork.isSet(client) == true)
        TCPCork.set(client, false)
        #expect(TCPCork.isSet(client) == false)
    }

    @Test func everythingWrittenWhileCorkedArrivesAfterUncorking() throws {
        let (client, server) = try connectedPair()
        defer { close(client); close(server) }
        TCPCork.set(client, true)
        let message = Array("HEADERS DATA WINDOW_UPDATE".utf8)
        for _ in 0..<3 { #expect(send(client, message, message.count, 0) == message.count) }
        TCPCork.set(client, false)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while received.count < message.count * 3 {
            let n = recv(server, &buffer, buffer.count, 0)
            try #require(n > 0)
            received += buffer[0..<n]
        }
        #expect(received == message + message + message)
    }

    @Test func leavesNonSocketsAndMissingSocketsAlone() throws {
        TCPCork.set(-1, true)   // no connection yet: nothing to do
        #expect(TCPCork.isSet(-1) == nil)
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        TCPCork.set(fds[1], true)
        #expect(TCPCork.isSet(fds[1]) == nil)
    }
}

/// The sender corks its connection: it learns the socket of every connection libcurl opens
/// (GOAWAY makes libcurl reconnect under the same multi handle) and corks its turns.
@Suite(.serialized) struct SenderCorkingTests {
    @Test func everyConnectionsSocketIsLearntAndItsTurnsCorked() throws {
        let key = TestKey()
        var config = SimulatorConfiguration(teamId: TestKey.teamId, keyId: TestKey.keyId, publicKeyPEM: key.publicKeyPEM)
        config.bundleId = StreamingSenderTests.bundle
        config.faults.goawayAfter = 100
        let sim = try APNsSimulator.start(config)
        defer { try? sim.shutdown() }
        let token = try ProviderToken(privateKeyPEM: key.privateKeyPEM, source: "test", teamId: TestKey.teamId, keyId: TestKey.keyId)
        let settings = ConnectionSettings(baseURL: "https://127.0.0.1:\(sim.port)", trust: .caPEM(sim.caCertificatePEM), maxStreams: 10)
        let sender = try APNsSender(settings: settings, connections: 1, token: token)
        // 10 in flight against a GOAWAY every 100 requests: at least 4 connections for 400 jobs.
        let results = StreamingSenderTests.stream(sender, StreamingSenderTests.jobs(1...400), ahead: 10)
        sender.shutdown()
        #expect(results.count == 400)
        let opened = sender.counters.connectionsOpened
        #expect(opened >= 4)
        #expect(sender.corking.socketsLearnt == opened)
        #expect(sender.corking.corkedTurns > 0)
    }
}
