import Foundation
import HeraldSimulator
import HeraldTestSupport
@testable import HeraldDelivery
import Testing

/// `TCPCork` on a real TCP connection over 127.0.0.1: the option is set and cleared on the
/// socket, the bytes written while corked stay on the writer's side, and clearing it sends them.
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

    /// Bytes the kernel holds in `fd`'s send queue, not yet sent (SIOCOUTQNSD, Linux).
    func unsentBytes(_ fd: Int32) -> Int32 {
        var n: Int32 = -1
        _ = ioctl(fd, UInt(0x894B), &n)   // SIOCOUTQNSD from <linux/sockios.h>
        return n
    }

    /// Bytes waiting to be read on `fd` (FIONREAD), without reading them.
    func readableBytes(_ fd: Int32) -> Int32 {
        var n: Int32 = -1
        _ = ioctl(fd, UInt(FIONREAD), &n)
        return n
    }

    /// While corked, small writes stay in the writer's send queue and the peer has nothing to
    /// read; uncorking sends them at once. Uncorked, the same writes leave as they are made.
    /// The kernel sends a corked partial segment anyway after 200 ms, so an attempt whose checks
    /// came later than 100 ms after the first write is repeated on a fresh connection.
    @Test func bytesWrittenWhileCorkedLeaveOnlyWhenUncorked() throws {
        let message = Array("HEADERS DATA WINDOW_UPDATE".utf8)
        let total = Int32(message.count * 3)
        var checked = false
        for _ in 0..<5 where !checked {
            let (client, server) = try connectedPair()
            defer { close(client); close(server) }
            TCPCork.set(client, true)
            let firstWrite = Date()
            for _ in 0..<3 { #expect(send(client, message, message.count, 0) == message.count) }
            let unsent = unsentBytes(client)
            var peer = pollfd(fd: server, events: Int16(POLLIN), revents: 0)
            let peerReadable = poll(&peer, 1, 0)
            let arrived = readableBytes(server)
            guard Date().timeIntervalSince(firstWrite) < 0.1 else { continue }   // past the cork's ceiling
            checked = true
            #expect(unsent == total, "corked: all \(total) bytes wait in the send queue (\(unsent) do)")
            #expect(peerReadable == 0 && arrived == 0, "corked: the peer has nothing to read (\(arrived) bytes)")

            // Clearing the option pushes the queued segment out within the setsockopt call.
            TCPCork.set(client, false)
            let left = unsentBytes(client)
            #expect(left == 0, "uncorked: the queue is sent at once (\(left) bytes left)")
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 256)
            while received.count < message.count * 3 {
                let n = recv(server, &buffer, buffer.count, 0)
                try #require(n > 0)
                received += buffer[0..<n]
            }
            #expect(received == message + message + message)
        }
        #expect(checked, "five attempts each took over 100 ms between the first write and the checks")
    }

    /// The control for the test above: the same writes without the cork leave at once.
    @Test func bytesWrittenUncorkedLeaveAsTheyAreMade() throws {
        let (client, server) = try connectedPair()
        defer { close(client); close(server) }
        let message = Array("HEADERS DATA WINDOW_UPDATE".utf8)
        for _ in 0..<3 { #expect(send(client, message, message.count, 0) == message.count) }
        #expect(waitUntil(timeout: 5) { readableBytes(server) == Int32(message.count * 3) },
                "uncorked: the peer can read every byte (\(readableBytes(server)))")
        #expect(unsentBytes(client) == 0)
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
        #expect(sender.probe.socketsLearnt == opened)
        #expect(sender.probe.corkedTurns > 0)
    }
}
