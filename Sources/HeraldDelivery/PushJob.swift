import Foundation
import HeraldCore

/// A request handed to the sender, tagged so its result finds its recipient again.
public struct PushJob: Sendable {
    /// Echoed as `PushResult.index` (the runner uses the recipient's row number).
    public var index: Int
    public var request: PushRequest
    public init(index: Int, request: PushRequest) { self.index = index; self.request = request }
}
