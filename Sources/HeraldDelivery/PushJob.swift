import Foundation
import HeraldCore

/// A request handed to the sender, tagged so its result finds its recipient again.
public struct PushJob: Sendable {
    /// Echoed as `PushResult.index` (the runner uses the recipient's row number).
    public var index: Int
    public var request: PushRequest
    /// The request must not start at or after this instant (the end of the recipient's sending
    /// window, or the start of its quiet hours): a connection that takes it later hands it back
    /// unstarted (`PushSending.takeExpired`). nil: no limit.
    public var notAfter: Date?
    /// The connection pool that sends it (`RoutingSender`'s `pools` index): one pool per APNs
    /// endpoint and credentials. A single `APNsSender` is one pool and ignores it.
    public var pool: Int
    public init(index: Int, request: PushRequest, notAfter: Date? = nil, pool: Int = 0) {
        self.index = index; self.request = request; self.notAfter = notAfter; self.pool = pool
    }
}
