import Foundation
import HeraldCore

/// `POST /4/broadcasts/apps/<bundle-id>` on the push port, checked as Apple describes a broadcast
/// (https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns):
///  1. path, method (404 `BadPath`, 405 `MethodNotAllowed`); 2. provider token (403);
///  3. bundle id: a push-type suffix 400 `TopicDisallowed`, another app than `--bundle-id` or an
///     app the credential is not for 403 `TopicMismatch`;
///  4. `apns-channel-id` missing 400 `MissingChannelId`, not base64 `BadChannelId`;
///  5. `apns-push-type` missing `MissingPushType`, not liveactivity `InvalidPushType`;
///  6. `apns-expiration` (required) missing or not an epoch `BadExpirationDate`;
///  7. `apns-priority` (required) missing or not 1, 5, 10 `BadPriority`;
///  8. the channel unknown `ChannelNotRegistered`; a nonzero expiration on a No Message Stored
///     channel `BadExpirationDate` ("results in message rejection");
///  9. body: empty `PayloadEmpty`, over 5,120 bytes 413 `PayloadTooLarge`, not a JSON object with
///     `aps` `BadRequestPayload`.
struct BroadcastValidator: Sendable {
    let validator: RequestValidator
    let channels: ChannelRegistry
    /// `SimulatorConfiguration.adoptsUnknownChannels`.
    var adoptsUnknownChannels = false
    /// Apple: "the payload is limited to a maximum size of 5 KB (5,120 bytes)".
    static let payloadLimit = 5_120

    static func isBroadcast(_ path: String) -> Bool { path.hasPrefix("/4/broadcasts/") }

    func validate(_ request: SimulatorRequest, on connection: SimulatorConnection, now: Date) -> SimulatorVerdict {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[2] == "broadcasts", parts[3] == "apps", !parts[4].isEmpty else {
            return .rejected("BadPath", token: nil, providerToken: nil)
        }
        let bundleId = String(parts[4])
        guard request.method == "POST" else { return .rejected("MethodNotAllowed", token: nil, providerToken: nil) }
        let auth = validator.authenticate(request, on: connection, now: now)
        func reject(_ reason: APNsReason) -> SimulatorVerdict {
            var verdict = SimulatorVerdict.rejected(reason, token: nil, providerToken: auth.claims, authenticated: auth.authenticated)
            verdict.topic = bundleId
            return verdict
        }
        if let problem = auth.problem { return reject(problem) }
        if bundleId.contains(".push-type.") { return reject("TopicDisallowed") }
        if let expected = validator.bundleId, expected != bundleId { return reject("TopicMismatch") }
        if !auth.apps.isEmpty, !auth.apps.contains(bundleId) { return reject("TopicMismatch") }
        guard let channel = request.header("apns-channel-id"), !channel.isEmpty else { return reject("MissingChannelId") }
        guard ChannelRegistry.isChannelId(channel) else { return reject("BadChannelId") }
        guard let pushType = request.header("apns-push-type") else { return reject("MissingPushType") }
        guard pushType.lowercased() == "liveactivity" else { return reject("InvalidPushType") }
        guard let expirationText = request.header("apns-expiration"), let expiration = Int(expirationText), expiration >= 0 else {
            return reject("BadExpirationDate")
        }
        guard let priority = request.header("apns-priority").flatMap(Int.init), [1, 5, 10].contains(priority) else {
            return reject("BadPriority")
        }
        let known = adoptsUnknownChannels ? channels.adopt(bundleId: bundleId, channel: channel) : channels.policy(bundleId: bundleId, channel: channel)
        guard let policy = known else { return reject("ChannelNotRegistered") }
        if policy == .noMessageStored && expiration != 0 { return reject("BadExpirationDate") }
        if request.bodyLength == 0 { return reject("PayloadEmpty") }
        if request.bodyLength > Self.payloadLimit { return reject("PayloadTooLarge") }
        if !JSONShape.isObjectWithApsDictionary(request.body) { return reject("BadRequestPayload") }
        var ok = SimulatorVerdict(status: 200, reason: nil, providerToken: auth.claims, authenticated: auth.authenticated)
        ok.topic = bundleId
        return ok
    }
}
