import Foundation

/// TCP_CORK around one `curl_multi_perform` turn. libcurl writes every request as its own TLS
/// record and `send` call (HEADERS and DATA together: Sources/CCurlNghttp2/coalesced_writes.c),
/// and with TCP_NODELAY on each would leave as its own segment. A turn starts dozens of requests;
/// corked, the kernel sends them as a few full segments when the turn ends, and the server reads
/// (and answers) them in larger batches, so both ends make fewer `send`/`recv` calls. No request
/// waits beyond its own turn: tcp(7) (https://man7.org/linux/man-pages/man7/tcp.7.html), "If set,
/// don't send out partial frames. All queued partial frames are sent when the option is cleared."
enum TCPCork {
    /// Best effort on a socket that may already be gone: `fd` < 0 is ignored, and a failed
    /// `setsockopt` (a socket libcurl closed meanwhile) changes nothing that matters.
    static func set(_ fd: Int32, _ on: Bool) {
        guard fd >= 0 else { return }
        var value: Int32 = on ? 1 : 0
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Whether `fd` is corked; nil when it is not a TCP socket.
    static func isSet(_ fd: Int32) -> Bool? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_CORK, &value, &length) == 0 else { return nil }
        return value != 0
    }
}
