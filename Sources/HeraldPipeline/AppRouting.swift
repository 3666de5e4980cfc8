import HeraldCore

/// Which app and environment each audience row is for (docs/many-apps.md): the row's
/// `audience.app_field` names one of `apns.apps`, its `audience.environment_field` says
/// `production` or `sandbox`. A job without them has one app (number 0) and every row goes to
/// `apns.endpoint`'s environment. The one place a row's route is decided, for `herald run`,
/// `validate` and `preview` alike.
public struct AppRouting: Sendable {
    /// The job's apps, in the job's order (`APNsSpec.appList`).
    public let apps: [AppSpec]
    /// The state file's number for each of `apps` (`RunState.registerApps`), in the same order.
    public let numbers: [UInt16]
    let appField: String?
    let environmentField: String?
    let defaultEnvironment: APNsEnvironment
    /// The apps' names, in `apps` order: searched in turn (a handful of short names compare
    /// faster than a String's hash).
    private let names: [String]
    /// A state file number to its index in `apps` (-1: no app of the job has it).
    private let indexOfNumber: [Int]

    public enum Route {
        case route(app: UInt16, environment: APNsEnvironment)
        case invalid(InvalidRow)
    }

    /// `numbers`: the state file's numbers for the job's apps; nil: their indexes (validate, preview).
    public init(job: JobSpec, numbers: [UInt16]? = nil) {
        apps = job.apns.appList
        self.numbers = numbers ?? apps.indices.map { UInt16($0) }
        // Channels listed per app in the job carry their app as a row's app field would.
        appField = job.apns.apps.isEmpty ? nil : job.audience.appField ?? (ListedChannels.namesApps(job) ? ListedChannels.appKey : nil)
        environmentField = job.audience.environmentField
        defaultEnvironment = job.apns.defaultEnvironment
        names = apps.map(\.name)
        var index = [Int](repeating: -1, count: Int(self.numbers.max() ?? 0) + 1)
        for (i, n) in self.numbers.enumerated() { index[Int(n)] = i }
        indexOfNumber = index
    }

    /// The row's app and environment, or why the row cannot be sent.
    public func route(_ record: AudienceRecord) -> Route {
        var app = numbers[0]
        if let field = appField {
            // A job with one app may still name an app field: a row naming another app is as wrong.
            guard let value = record.app else {
                return .invalid(InvalidRow(location: record.location, reason: .missingField, field: field,
                                           detail: "field \(field) is missing: audience.app_field names each row's app (one of \(appNames))"))
            }
            guard let i = names.firstIndex(of: value) else {
                return .invalid(InvalidRow(location: record.location, reason: .unknownApp, field: field,
                                           detail: "app \"\(value)\" (field \(field)) is not one of apns.apps: \(appNames)"))
            }
            app = numbers[i]
        }
        var environment = defaultEnvironment
        if let field = environmentField, let value = record.environment {
            guard let e = APNsEnvironment(name: value) else {
                return .invalid(InvalidRow(location: record.location, reason: .badFieldValue, field: field,
                                           detail: "field \(field) is \"\(value)\": audience.environment_field takes production or sandbox"))
            }
            environment = e
        }
        return .route(app: app, environment: environment)
    }

    /// The job's app with this state file number; nil when the job no longer has it.
    public func app(number: Int) -> AppSpec? {
        guard number >= 0, number < indexOfNumber.count, indexOfNumber[number] >= 0 else { return nil }
        return apps[indexOfNumber[number]]
    }

    private var appNames: String { apps.map(\.name).joined(separator: ", ") }

}
