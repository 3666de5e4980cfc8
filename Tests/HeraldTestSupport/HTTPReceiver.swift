import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server on 127.0.0.1 (plain sockets, a thread per connection) that records every
/// request it receives and answers each with `answer`: a status, or no answer at all (`hang`, the
/// connection held open until `stop`), for tests of herald's pings and webhooks.
public final class HTTPReceiver: @unchecked Sendable {
    // @unchecked: the records and the answer are behind `lock`; the listening socket is set once.
    public struct Request: Sendable, Equatable {
        public let method: String
        public let path: String
        public let headers: [String: String]
        public let body: String
    }

    public enum Answer: Sendable, Equatable { case status(Int), hang }

    public private(set) var port: Int = 0
    private let listener: Int32
    private let lock = NSLock()
    private var received: [Request] = []
    private var current: Answer
    private var stopped = false
    private var held: [Int32] = []

    public init(answer: Answer = .status(200)) throws {
        current = answer
        (listener, port) = try LoopbackSocket.bound(listening: true, what: "receiver")
        let accepting = Thread { [self] in acceptLoop() }
        accepting.start()
    }

    deinit { stop() }

    public var url: String { "http://127.0.0.1:\(port)" }
    public var requests: [Request] { lock.withLock { received } }
    public var answer: Answer {
        get { lock.withLock { current } }
        set { lock.withLock { current = newValue } }
    }
    /// When set, decides each request's answer from its number (0 for the first one), instead of `answer`.
    public var answering: (@Sendable (Int) -> Answer)? {
        get { lock.withLock { decide } }
        set { lock.withLock { decide = newValue } }
    }
    private var decide: (@Sendable (Int) -> Answer)?
    /// The body of every status answer.
    public var body: String {
        get { lock.withLock { answerBody } }
        set { lock.withLock { answerBody = newValue } }
    }
    private var answerBody = ""

    public func stop() {
        let (first, open) = lock.withLock { () -> (Bool, [Int32]) in
            defer { stopped = true; held = [] }
            return (!stopped, held)
        }
        guard first else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if lock.withLock({ stopped }) { return }
                continue
            }
            let serving = Thread { [self] in serve(client) }
            serving.start()
        }
    }

    private func serve(_ fd: Int32) {
        guard let request = readRequest(fd) else { close(fd); return }
        let (answer, body) = lock.withLock { () -> (Answer, String) in
            let answer = decide?(received.count) ?? current
            received.append(request)
            if case .hang = answer { held.append(fd) }
            return (answer, answerBody)
        }
        switch answer {
        case .hang:
            return   // closed by stop()
        case .status(let code):
            let text = "HTTP/1.1 \(code) \(code < 300 ? "OK" : "Error")\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
            _ = text.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            close(fd)
        }
    }

    /// One request: its head up to the blank line, then Content-Length bytes of body.
    private func readRequest(_ fd: Int32) -> Request? {
        var data = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        var headEnd: Int?
        var contentLength = 0
        var head: [String] = []
        while true {
            if let end = headEnd, data.count >= end + contentLength { break }
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return nil }
            data.append(contentsOf: chunk[0..<n])
            if headEnd == nil, let r = Self.find([13, 10, 13, 10], in: data) {
                headEnd = r + 4
                head = String(decoding: data[0..<r], as: UTF8.self).components(separatedBy: "\r\n")
                for line in head.dropFirst() where line.lowercased().hasPrefix("content-length:") {
                    contentLength = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
        }
        let parts = head.first?.split(separator: " ") ?? []
        guard parts.count >= 2, let end = headEnd else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Request(method: String(parts[0]), path: String(parts[1]), headers: headers,
                       body: String(decoding: data[end..<(end + contentLength)], as: UTF8.self))
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where Array(haystack[i..<(i + needle.count)]) == needle { return i }
        return nil
    }
}
