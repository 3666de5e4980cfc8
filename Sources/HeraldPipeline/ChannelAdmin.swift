import Foundation
import HeraldCore
import HeraldDelivery

/// `herald channels`: one app of the job (its `apns.topic`, or `--app` of `apns.apps`), that
/// app's credentials, and one environment (the job's, or `--environment`), pointed at the channel
/// management API: Apple's host for the environment, or `apns.channels_endpoint` /
/// `--channels-endpoint` for anything else, such as `herald sim --management-port`. Channels are
/// per app and per environment (https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns):
/// each is managed with its own app's key or certificate. Failures are `RunFailure`s with
/// `herald run`'s exit codes.
public struct ChannelAdmin {
    public let client: ChannelManagementClient
    public let bundleId: String
    public let baseURL: String
    /// `--app` as given; nil when the job's one app was taken.
    public let app: String?
    public let environment: APNsEnvironment

    /// `app`: one of `apns.apps` by name (required with more than one). `environment`: nil for the
    /// job's (`apns.endpoint`). `channelsEndpointGiven`: `apns.channels_endpoint` holds
    /// `--channels-endpoint` (it then serves any environment; the job's own serves the job's).
    public init(spec: JobSpec, app name: String? = nil, environment: APNsEnvironment? = nil, channelsEndpointGiven: Bool = false) throws(RunFailure) {
        let apns = spec.apns
        let app = try Self.app(named: name, spec: spec)
        let environment = environment ?? apns.defaultEnvironment
        let base = try Self.managementURL(spec: spec, environment: environment, channelsEndpointGiven: channelsEndpointGiven)
        // Only this app's certificate is read: another app's password need not be set to manage this one's channels.
        var own = spec
        if !apns.apps.isEmpty { own.apns.apps = [app] }
        let credentials = try DeliveryTarget.loadCredentials(own, forPushes: false)
        let identity = app.certificate.flatMap { credentials.identities[$0] }
        let token: ProviderToken?
        do { token = try app.auth.map { try ProviderToken(auth: $0) } } catch {
            throw RunFailure(.usage, "\(spec.jobFile): \(error)")
        }
        guard token != nil || identity != nil else {
            let key = apns.apps.isEmpty ? "apns.auth or apns.certificate" : "app \(app.name)'s auth or certificate"
            throw RunFailure(.usage, "\(spec.jobFile): \(key) is required to manage channels")
        }
        bundleId = app.topic
        baseURL = base
        self.app = name
        self.environment = environment
        client = ChannelManagementClient(baseURL: base, bundleId: app.topic, trust: apns.caFile.map { .caFile($0) } ?? .system,
                                         token: token, identity: identity, proxy: credentials.proxy,
                                         timeoutSeconds: Double(apns.requestTimeout))
    }

    /// The job's one app, or the one `--app` names.
    static func app(named name: String?, spec: JobSpec) throws(RunFailure) -> AppSpec {
        let apps = spec.apns.apps
        let names = apps.map(\.name).joined(separator: ", ")
        guard let name else {
            guard apps.count <= 1 else {
                throw RunFailure(.usage, "\(spec.jobFile): the job has \(apps.count) apps (\(names)) and channels are per app: name one with --app")
            }
            return spec.apns.appList[0]
        }
        guard !apps.isEmpty else {
            throw RunFailure(.usage, "\(spec.jobFile): --app \(name): the job has no apns.apps (its one app is apns.topic \(spec.apns.topic)); leave out --app")
        }
        guard let app = apps.first(where: { $0.name == name }) else {
            throw RunFailure(.usage, "\(spec.jobFile): --app \(name) is not one of apns.apps: \(names)")
        }
        return app
    }

    /// Where one environment's channels are managed: `--channels-endpoint`; the job's
    /// `apns.channels_endpoint` for the job's environment; Apple's host for the environment, unless
    /// `apns.endpoints` sends that environment's pushes elsewhere (a relay or `herald sim` keeps
    /// its channels on its own management port, and Apple's would not know them).
    static func managementURL(spec: JobSpec, environment: APNsEnvironment, channelsEndpointGiven: Bool) throws(RunFailure) -> String {
        let apns = spec.apns
        if let url = apns.channelsEndpoint, channelsEndpointGiven || environment == apns.defaultEnvironment { return url }
        if let pushes = apns.endpoints[environment] {
            throw RunFailure(.usage, "\(spec.jobFile): apns.endpoints sends \(environment.name) pushes to \(pushes), whose channels Apple's host does not have: "
                             + "give --channels-endpoint (herald sim: its --management-port URL)")
        }
        switch apns.endpoint {
        case .production, .sandbox:
            return (environment == .production ? APNsEndpoint.production : APNsEndpoint.sandbox).channelManagementURL!
        case .simulator:
            throw RunFailure(.usage, "\(spec.jobFile): endpoint: simulator runs inside `herald run` and forgets its channels when it ends; "
                             + "start `herald sim --management-port N` and point apns.endpoint and apns.channels_endpoint (or --endpoint and --channels-endpoint) at it")
        case .custom:
            let which = apns.channelsEndpoint != nil ? " for \(environment.name) (apns.channels_endpoint serves the job's \(apns.defaultEnvironment.name))" : ""
            throw RunFailure(.usage, "\(spec.jobFile): apns.channels_endpoint (or --channels-endpoint) is needed with endpoint \(apns.endpoint.name)\(which): "
                             + "channels are managed on another host and port than pushes are sent to")
        }
    }
}
