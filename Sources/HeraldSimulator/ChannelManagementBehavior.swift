import Foundation
import HeraldCore

/// The channel management API on its own port (Apple's `api-manage-broadcast` hosts, 2195/2196):
/// `POST /1/apps/<bundle>/channels` creates (201, `apns-channel-id`), `GET` reads (200, the
/// channel's policy) and `DELETE` deletes (204) the channel named by the `apns-channel-id`
/// header; `GET /1/apps/<bundle>/all-channels` lists (200, `{"channels":[…]}`)
/// (https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns).
/// Checked in this order: path (404 `BadPath`), method (405 `MethodNotAllowed`), provider token
/// (403, as for pushes), bundle id (403 `TopicMismatch` when the simulator has one or the
/// credential is for other apps), then per
/// operation the body (`BadRequestPayload`, `BadRequestParams`), the limit
/// (`CannotCreateChannelConfig`) and the channel id (`MissingChannelId`, `BadChannelId`,
/// `ChannelNotRegistered`). Apple publishes one reason table for both APIs and no order; this is
/// the order a server that parses before it authorizes and looks up would answer in.
public struct ChannelManagementBehavior: SimulatorBehavior {
    let validator: RequestValidator
    let channels: ChannelRegistry
    let faults: StatusFaults?

    public init(configuration: SimulatorConfiguration, channels: ChannelRegistry) throws(SimulatorError) {
        validator = try RequestValidator(configuration: configuration)
        self.channels = channels
        faults = configuration.faults.injectsStatuses ? StatusFaults(configuration.faults) : nil
    }

    enum Operation { case channels, allChannels }

    /// The create request's body (Apple: `message-storage-policy` 0 or 1, `push-type` LiveActivity).
    struct CreateBody: Decodable {
        let policy: Int
        let pushType: String
        enum CodingKeys: String, CodingKey { case policy = "message-storage-policy", pushType = "push-type" }
    }

    public func respond(to request: SimulatorRequest, on connection: SimulatorConnection, now: Date) -> SimulatorVerdict {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "1", parts[2] == "apps", !parts[3].isEmpty,
              let operation: Operation = parts[4] == "channels" ? .channels : (parts[4] == "all-channels" ? .allChannels : nil) else {
            return .rejected("BadPath", token: nil, providerToken: nil)
        }
        let bundleId = String(parts[3])
        switch (operation, request.method) {
        case (.channels, "POST"), (.channels, "GET"), (.channels, "DELETE"), (.allChannels, "GET"): break
        default: return .rejected("MethodNotAllowed", token: nil, providerToken: nil)
        }
        let auth = validator.authenticate(request, on: connection, now: now)
        func reject(_ reason: APNsReason) -> SimulatorVerdict {
            var verdict = SimulatorVerdict.rejected(reason, token: nil, providerToken: auth.claims, authenticated: auth.authenticated)
            verdict.topic = bundleId
            return verdict
        }
        if let problem = auth.problem { return reject(problem) }
        if let expected = validator.bundleId, expected != bundleId { return reject("TopicMismatch") }
        if !auth.apps.isEmpty, !auth.apps.contains(bundleId) { return reject("TopicMismatch") }
        if let faults, let fault = faults.decide(token: request.header("apns-request-id") ?? request.path) {
            var v = reject(fault.reason)
            v.fault = fault.name
            return v
        }
        var ok = SimulatorVerdict(status: 200, reason: nil, providerToken: auth.claims, authenticated: auth.authenticated)
        ok.topic = bundleId

        if operation == .allChannels {
            var body = Array(#"{"channels":["#.utf8)
            for (i, id) in channels.list(bundleId: bundleId).enumerated() {
                if i > 0 { body.append(UInt8(ascii: ",")) }
                JSONEscaping.appendQuoted(id, to: &body)
            }
            body.append(contentsOf: "]}".utf8)
            ok.payload = body
            return ok
        }
        if request.method == "POST" {
            guard let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any] else {
                return reject("BadRequestPayload")
            }
            // Values through JSONDecoder: Foundation's NSNumber would take `true` for 1.
            guard Set(object.keys).isSubset(of: ["message-storage-policy", "push-type"]),
                  let fields = try? JSONDecoder().decode(CreateBody.self, from: Data(request.body)),
                  let policy = ChannelRegistry.StoragePolicy(rawValue: fields.policy), fields.pushType.lowercased() == "liveactivity" else {
                return reject("BadRequestParams")
            }
            guard let id = channels.create(bundleId: bundleId, policy: policy) else { return reject("CannotCreateChannelConfig") }
            ok.status = 201
            ok.extraHeaders = ["apns-channel-id": id]
            return ok
        }
        guard let id = request.header("apns-channel-id"), !id.isEmpty else { return reject("MissingChannelId") }
        guard ChannelRegistry.isChannelId(id) else { return reject("BadChannelId") }
        if request.method == "DELETE" {
            guard channels.delete(bundleId: bundleId, channel: id) else { return reject("ChannelNotRegistered") }
            ok.status = 204
            return ok
        }
        guard let policy = channels.policy(bundleId: bundleId, channel: id) else { return reject("ChannelNotRegistered") }
        ok.payload = Array(#"{"message-storage-policy":\#(policy.rawValue),"push-type":"LiveActivity"}"#.utf8)
        return ok
    }
}
