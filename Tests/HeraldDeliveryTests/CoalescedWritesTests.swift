import CCurlNghttp2
import Testing

/// CCurlNghttp2's outbox (coalesced_writes.c) driven by a fake nghttp2 (`produce`, which hands
/// it frames) and a fake socket (`deliver`, which takes what a script says). The real pair is
/// covered end to end by RequestFieldsTests; these take the paths loopback never does: a socket
/// that would block, a partial write, a failed one, more than an outbox holds.
@Suite(.serialized) struct CoalescedWritesTests {
    /// What the fakes see and do; global because C callbacks cannot capture.
    struct Script {
        /// Frames `produce` hands over, in order, until one is refused (nghttp2 then keeps it queued).
        var frames: [[UInt8]] = []
        var produceCalls = 0
        /// Per `deliver` call, how much it takes: nil all, an Int that many bytes, or its result as is when negative.
        var answers: [Int?] = []
        var deliverCalls: [(address: UInt, length: Int)] = []
        var delivered: [UInt8] = []
    }
    nonisolated(unsafe) static var script = Script()

    static let wouldBlock = -504, callbackFailure = -902

    static let produce: herald_produce_fn = { session in
        script.produceCalls += 1
        while let frame = script.frames.first {
            let taken = frame.withUnsafeBufferPointer { herald_coalesced_collect(session, $0.baseAddress, $0.count, 0, nil) }
            if taken < 0 { return 0 }
            if taken < frame.count { script.frames[0] = Array(frame[taken...]) } else { script.frames.removeFirst() }
        }
        return 0
    }

    static let deliver: herald_deliver_fn = { _, data, length, _, _ in
        script.deliverCalls.append((UInt(bitPattern: data), length))
        let answer = script.answers.isEmpty ? nil : script.answers.removeFirst()
        if let answer, answer < 0 { return answer }
        let n = min(length, answer ?? length)
        script.delivered += UnsafeBufferPointer(start: data, count: n)
        return n
    }

    /// A fresh session address per test, its outbox dropped afterwards.
    static func withSession(_ n: Int, _ body: (UnsafeMutableRawPointer) throws -> Void) rethrows {
        script = Script()
        let session = UnsafeMutableRawPointer(bitPattern: 0x10_000 + n * 16)!
        defer { herald_coalesced_forget(session) }
        try body(session)
    }

    static func frame(_ byte: UInt8, _ count: Int) -> [UInt8] { Array(repeating: byte, count: count) }

    @Test func theFramesOfOneCallLeaveInOneWrite() {
        Self.withSession(1) { s in
            let headers = Self.frame(1, 100), data = Self.frame(2, 300)
            Self.script.frames = [headers, data]
            #expect(herald_coalesced_send(s, Self.produce, Self.deliver) == 0)
            #expect(Self.script.deliverCalls.map(\.length) == [400])
            #expect(Self.script.delivered == headers + data)
            #expect(herald_coalesced_pending(s) == 0)
        }
    }

    @Test func aWriteThatWouldBlockIsRetriedWithTheSameBytesBeforeAnyNewFrame() {
        Self.withSession(2) { s in
            let a = Self.frame(1, 120), b = Self.frame(2, 80), c = Self.frame(3, 50)
            Self.script.frames = [a, b]
            Self.script.answers = [Self.wouldBlock]
            #expect(herald_coalesced_send(s, Self.produce, Self.deliver) == 0)
            #expect(herald_coalesced_pending(s) == 1, "want_write must stay true while bytes wait")
            #expect(Self.script.delivered.isEmpty)
            let blocked = Self.script.deliverCalls[0]

            Self.script.frames = [c]
            #expect(herald_coalesced_send(s, Self.produce, Self.deliver) == 0)
            // OpenSSL wants a blocked write retried with the same buffer and length.
            #expect(Self.script.deliverCalls[1] == blocked)
            #expect(Self.script.produceCalls == 2, "new frames only after the waiting ones went out")
            #expect(Self.script.delivered == a + b + c)
            #expect(Self.script.deliverCalls.count == 3)
            #expect(herald_coalesced_pending(s) == 0)
        }
    }

    @Test func aPartialWriteContinuesWhereTheSocketStopped() {
        Self.withSession(3) { s in
            let a = Self.frame(1, 100), b = Self.frame(2, 300)
            Self.script.frames = [a, b]
            Self.script.answers = [150, Self.wouldBlock, nil]
            #expect(herald_coalesced_send(s, Self.produce, Self.deliver) == 0)
            #expect(herald_coalesced_pending(s) == 1)
            #expect(herald_coalesced_send(s, Self.produce, Self.deliver) == 0)
            let calls = Self.script.deliverCalls
            #expect(calls.map(\.length) == [400, 250, 250])
            #expect(calls[1].address == calls[0].address + 150 && calls[2] == calls[1])
            #expect(Self.script.delivered == a + b)
            #expect(herald_coalesced_pending(s) == 0)
        }
    }

    @Test func aFailedWriteFailsTheSendAndLeavesNothingBehind() {
        Self.withSession(4) { s in
            Self.script.frames = [Self.frame(1, 64)]
            Self.script.answers = [Self.callbackFailure]
            #expect(herald_coalesced_send(s, Self.produce, Self.deliver) == Int32(Self.callbackFailure))
            #expect(herald_coalesced_pending(s) == 0)
            let next = Self.frame(2, 10)
            Self.script.frames = [next]
            #expect(herald_coalesced_send(s, Self.produce, Self.deliver) == 0)
            #expect(Self.script.delivered == next, "the failed bytes are never sent later")
        }
    }

    @Test func framesBeyondOneOutboxGoOutInOrderAcrossSeveralWrites() {
        Self.withSession(5) { s in
            let frames = (0..<7).map { Self.frame(UInt8($0 + 1), 16_393) }   // a DATA frame of 16 KiB and its header
            Self.script.frames = frames
            #expect(herald_coalesced_send(s, Self.produce, Self.deliver) == 0)
            #expect(Self.script.delivered == frames.flatMap { $0 })
            #expect(Self.script.deliverCalls.map(\.length) == [65_536, 7 * 16_393 - 65_536])
            #expect(Self.script.produceCalls == 2)
        }
    }
}
