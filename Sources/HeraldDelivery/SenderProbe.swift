/// What a sender's connections did that only tests look at: whether each CCurlNghttp2 shim was
/// in the path, whether sockets were corked, whether requests carried their fields through
/// nghttp2. The delivery engine's one test-only seam: each worker counts on its own thread and
/// adds its counts here once, when it stops, so nothing on the send path shares or reads them.
struct SenderProbe: Equatable {
    /// Sockets the worker learnt for corking (one per connection opened).
    var socketsLearnt = 0
    /// `curl_multi_perform` turns made corked.
    var corkedTurns = 0
    /// Answered requests whose APNs header fields went to nghttp2 directly, and those answered
    /// without them (CCurlNghttp2 bypassed: resent with libcurl's header list).
    var requestFieldsAttached = 0, requestFieldsMissed = 0
    /// What CCurlNghttp2's shims counted on the worker's thread.
    var shim = ShimCounts()

    mutating func add(_ other: SenderProbe) {
        socketsLearnt += other.socketsLearnt
        corkedTurns += other.corkedTurns
        requestFieldsAttached += other.requestFieldsAttached
        requestFieldsMissed += other.requestFieldsMissed
        shim.add(other.shim)
    }
}
