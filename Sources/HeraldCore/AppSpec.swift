/// One app a campaign sends for: `apns.apps[i]`, or the job's own `apns.topic` with its `auth` or
/// `certificate` (then `name` is empty and no row names an app). Rows name their app by `name`
/// (`audience.app_field`); pushes go with its topic and credentials (docs/many-apps.md).
public struct AppSpec: Sendable, Equatable {
    /// The value of the audience's app field that selects this app.
    public var name: String
    /// The bundle id (`apns-topic` without the push type's suffix).
    public var topic: String
    /// Token auth; nil with `certificate`, or with `endpoint: simulator` (a key made at run time).
    public var auth: TokenAuthSpec?
    public var certificate: CertificateAuthSpec?
    /// This app's `connections` and `streams_per_connection`; nil: the job's `apns` values.
    public var connections: Int?
    public var streamsPerConnection: Int?
    /// The job file's line of the app's entry (messages).
    public var line: Int?

    public init(name: String, topic: String, auth: TokenAuthSpec? = nil, certificate: CertificateAuthSpec? = nil,
                connections: Int? = nil, streamsPerConnection: Int? = nil) {
        self.name = name; self.topic = topic; self.auth = auth; self.certificate = certificate
        self.connections = connections; self.streamsPerConnection = streamsPerConnection
    }
}

/// The APNs environment a token belongs to: a token from a development build is known only to
/// the sandbox, and production answers it 400 BadDeviceToken
/// (https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
/// Raw values are stored in the state file.
public enum APNsEnvironment: Int, Sendable, CaseIterable, Comparable {
    case production = 0
    case sandbox = 1

    /// The audience's and the reports' word for it.
    public var name: String { self == .production ? "production" : "sandbox" }

    public init?(name: String) {
        switch name {
        case "production": self = .production
        case "sandbox": self = .sandbox
        default: return nil
        }
    }

    /// The other one (`apns.environment_fallback`).
    public var other: APNsEnvironment { self == .production ? .sandbox : .production }

    public static func < (a: APNsEnvironment, b: APNsEnvironment) -> Bool { a.rawValue < b.rawValue }
}

extension APNsSpec {
    /// The apps the job sends for, never empty: `apns.apps`, or the one app of `apns.topic`.
    public var appList: [AppSpec] {
        apps.isEmpty ? [AppSpec(name: "", topic: topic, auth: auth, certificate: certificate)] : apps
    }

    /// The environment rows go to unless their `audience.environment_field` says otherwise:
    /// `endpoint: sandbox` is the sandbox; production, the in-process simulator and a custom URL
    /// stand for production.
    public var defaultEnvironment: APNsEnvironment { endpoint == .sandbox ? .sandbox : .production }

    /// Where one environment's pushes go: `apns.endpoints` when it names that environment, else
    /// Apple's host (`endpoint: production` or `sandbox`), else the job's `endpoint` URL. Nil for
    /// the in-process simulator, which herald starts itself.
    public func baseURL(for environment: APNsEnvironment) -> String? {
        if let url = endpoints[environment] { return url }
        switch endpoint {
        case .production, .sandbox: return environment == .production ? APNsEndpoint.production.baseURL : APNsEndpoint.sandbox.baseURL
        case .custom(let url): return url
        case .simulator: return nil
        }
    }
}
