import Foundation
import HeraldCore

/// Apple's broadcast channel management API, one request at a time: create, read, delete and
/// list the channels of one app
/// (https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns).
/// Every request carries a fresh `apns-request-id`, which APNs echoes; errors keep it, since
/// Apple asks for it when troubleshooting. Answers are decided by the one reason table.
public final class ChannelManagementClient {
    /// Apple's `message-storage-policy`.
    public enum StoragePolicy: Int, Sendable, CaseIterable {
        /// 0, No Message Stored: delivered to devices online now only; a higher publishing budget.
        case none = 0
        /// 1, Most Recent Message Stored: the latest message waits (up to 8 hours) for offline devices.
        case mostRecent = 1

        public var name: String { self == .none ? "none" : "most-recent" }
        public init?(name: String) {
            switch name {
            case "none", "0": self = .none
            case "most-recent", "most_recent", "1": self = .mostRecent
            default: return nil
            }
        }
    }

    /// Why a request did not do what was asked.
    public enum Failure: Error, CustomStringConvertible, Equatable {
        /// APNs answered with an error status (and, usually, a reason from the table).
        case rejected(status: Int, reason: APNsReason?, requestId: String)
        /// No answer (connection, TLS, timeout).
        case transport(HTTPCallError)
        /// A success status with a body or headers that do not read as Apple documents them.
        case unexpected(status: Int, detail: String, requestId: String)

        public var description: String {
            switch self {
            case .rejected(let status, let reason, let requestId):
                let meaning = reason?.entry.map { ": \($0.meaning)" } ?? ""
                return "APNs answered \(status) \(reason?.rawValue ?? "(no reason)")\(meaning) (apns-request-id \(requestId))"
            case .transport(let e): return e.description
            case .unexpected(let status, let detail, let requestId): return "APNs answered \(status) but \(detail) (apns-request-id \(requestId))"
            }
        }

        /// What the reason table says to do: abort (configuration), retry later, or permanent.
        public var action: ReasonAction {
            switch self {
            case .rejected(let status, let reason, _): return APNsReasonTable.action(status: status, reason: reason)
            case .transport: return .retryOnNewConnection
            case .unexpected: return .permanent
            }
        }
    }

    let baseURL: String
    let bundleId: String
    let trust: TLSTrust
    let identity: ClientIdentity?
    let token: ProviderToken?
    let proxy: ProxySettings?
    let timeoutSeconds: Double
    private let session = HTTPSession()

    /// `baseURL`: `https://host:port` of the management API; `token` nil with a client certificate.
    public init(baseURL: String, bundleId: String, trust: TLSTrust, token: ProviderToken?, identity: ClientIdentity?,
                proxy: ProxySettings? = nil, timeoutSeconds: Double = 30) {
        self.baseURL = baseURL; self.bundleId = bundleId; self.trust = trust; self.token = token; self.identity = identity
        self.proxy = proxy; self.timeoutSeconds = timeoutSeconds
    }

    /// A new channel: its id (base64) and the request id.
    public func create(policy: StoragePolicy) throws(Failure) -> (channel: String, requestId: String) {
        let body = #"{"message-storage-policy": \#(policy.rawValue), "push-type": "LiveActivity"}"#
        let (answer, requestId) = try perform("POST", "channels", body: Array(body.utf8))
        guard answer.status == 201 || answer.status == 200, let id = answer.headers["apns-channel-id"], !id.isEmpty else {
            throw .unexpected(status: answer.status, detail: "no apns-channel-id header", requestId: requestId)
        }
        return (id, requestId)
    }

    /// The channel's storage policy.
    public func read(_ channel: String) throws(Failure) -> StoragePolicy {
        let (answer, requestId) = try perform("GET", "channels", channel: channel)
        struct Body: Decodable {
            let policy: Int
            enum CodingKeys: String, CodingKey { case policy = "message-storage-policy" }
        }
        guard let body = try? JSONDecoder().decode(Body.self, from: Data(answer.body)), let policy = StoragePolicy(rawValue: body.policy) else {
            throw .unexpected(status: answer.status, detail: "its body has no message-storage-policy of 0 or 1", requestId: requestId)
        }
        return policy
    }

    public func delete(_ channel: String) throws(Failure) {
        _ = try perform("DELETE", "channels", channel: channel)
    }

    /// Every channel of the app, as APNs lists them.
    public func list() throws(Failure) -> [String] {
        let (answer, requestId) = try perform("GET", "all-channels")
        struct Body: Decodable { let channels: [String] }
        guard let body = try? JSONDecoder().decode(Body.self, from: Data(answer.body)) else {
            throw .unexpected(status: answer.status, detail: "its body is not {\"channels\": [...]}", requestId: requestId)
        }
        return body.channels
    }

    private func perform(_ method: String, _ resource: String, channel: String? = nil, body: [UInt8] = []) throws(Failure) -> (HTTPCall.Answer, String) {
        let requestId = UUID().uuidString.lowercased()
        var headers = ["apns-request-id: \(requestId)"]
        if let channel { headers.append("apns-channel-id: \(channel)") }
        if !body.isEmpty { headers.append("content-type: application/json") }
        if let token {
            do { headers.append("authorization: bearer \(try token.current())") } catch {
                throw .unexpected(status: 0, detail: "the provider token could not be signed: \(error)", requestId: requestId)
            }
        }
        var call = HTTPCall(method: method, url: "\(baseURL)/1/apps/\(bundleId)/\(resource)", headers: headers, body: body,
                            timeoutSeconds: timeoutSeconds)
        call.trust = trust
        call.identity = identity
        call.proxy = proxy
        let answer: HTTPCall.Answer
        switch session.perform(call) {
        case .success(let a): answer = a
        case .failure(let e): throw .transport(e)
        }
        let echoed = answer.headers["apns-request-id"] ?? requestId
        guard answer.isSuccess else {
            struct ErrorBody: Decodable { let reason: String? }
            let reason = (try? JSONDecoder().decode(ErrorBody.self, from: Data(answer.body)))?.reason.map { APNsReason($0) }
            throw .rejected(status: answer.status, reason: reason, requestId: echoed)
        }
        return (answer, echoed)
    }
}
