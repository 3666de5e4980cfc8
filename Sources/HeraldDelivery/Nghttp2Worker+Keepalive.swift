internal import CHTTP2Client

/// Keepalive on the nghttp2 engine's connections. Apple: "You can check the health of your
/// connection using an HTTP/2 PING frame."
/// (https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns)
///
/// A connection, current or draining, on which the server has sent nothing (no answer, no frame
/// at all) for `pingIntervalMs` gets a PING. Silence from the server is the measure, not
/// silence either way: a connection swallowed by a black hole (a NAT or load balancer that
/// dropped its mapping without a reset) still takes every request herald writes, and only the
/// missing answers show it. Without the ACK within `pingTimeoutMs`, CHTTP2Client gives the
/// connection up on its next turn: its open streams come back as lost (`turnAll` records them as
/// transport failures, which the runner resends with the same apns-id), and the next work opens
/// a new connection. On a busy, healthy connection answers keep arriving, so no PING is ever sent.
///
/// The ACK is itself a frame from the server, so an idle connection gets one PING per interval
/// until `idleTimeoutMs` closes it: PINGs keep a connection herald means to reuse alive and
/// checked; they never keep an unused one open (docs/delivery.md, "Keepalive and idle close").
extension Nghttp2Worker {
    /// Once per turn of the worker, before the connections' turns (which write the PING, and give
    /// up a connection whose PING went unanswered).
    func keepAlive(_ current: Connection?, _ draining: [Connection]) {
        if let current { pingIfSilent(current) }
        for c in draining { pingIfSilent(c) }
    }

    private func pingIfSilent(_ c: Connection) {
        guard h2_ping_outstanding(c.handle) == 0, h2_idle_ms(c.handle) >= Int64(settings.pingIntervalMs) else { return }
        // NGHTTP2_ERR_NOMEM queues nothing: the next turn asks again.
        _ = h2_ping(c.handle, Int32(clamping: settings.pingTimeoutMs))
    }
}
