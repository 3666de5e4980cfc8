import Foundation
import HeraldCore
import HeraldDelivery

/// `herald channels`: the job's app (its `apns.topic`), credentials and environment, pointed at
/// the channel management API: Apple's host for `production` and `sandbox`, or
/// `apns.channels_endpoint` (`--channels-endpoint`) for a custom endpoint such as `herald sim
/// --management-port`. Failures are `RunFailure`s with `herald run`'s exit codes.
public struct ChannelAdmin {
    public let client: ChannelManagementClient
    public let bundleId: String
    public let baseURL: String

    public init(spec: JobSpec) throws(RunFailure) {
        let apns = spec.apns
        guard let base = apns.channelsEndpoint ?? apns.endpoint.channelManagementURL else {
            if apns.endpoint == .simulator {
                throw RunFailure(.usage, "\(spec.jobFile): endpoint: simulator runs inside `herald run` and forgets its channels when it ends; "
                                 + "start `herald sim --management-port N` and point apns.endpoint and apns.channels_endpoint (or --endpoint and --channels-endpoint) at it")
            }
            throw RunFailure(.usage, "\(spec.jobFile): apns.channels_endpoint (or --channels-endpoint) is needed with endpoint \(apns.endpoint.name): "
                             + "channels are managed on another host and port than pushes are sent to")
        }
        guard apns.apps.count <= 1 else {
            throw RunFailure(.usage, "\(spec.jobFile): herald channels manages one app's channels, and apns.apps has \(apns.apps.count): "
                             + "give it a job whose apns names that app alone")
        }
        let app = apns.appList[0]
        let credentials = try DeliveryTarget.loadCredentials(spec, forPushes: false)
        let identity = app.certificate.flatMap { credentials.identities[$0] }
        let token: ProviderToken?
        do { token = try app.auth.map { try ProviderToken(auth: $0) } } catch {
            throw RunFailure(.usage, "\(spec.jobFile): \(error)")
        }
        guard token != nil || identity != nil else {
            throw RunFailure(.usage, "\(spec.jobFile): apns.auth or apns.certificate is required to manage channels")
        }
        bundleId = app.topic
        baseURL = base
        client = ChannelManagementClient(baseURL: base, bundleId: app.topic, trust: apns.caFile.map { .caFile($0) } ?? .system,
                                         token: token, identity: identity, proxy: credentials.proxy,
                                         timeoutSeconds: Double(apns.requestTimeout))
    }
}
