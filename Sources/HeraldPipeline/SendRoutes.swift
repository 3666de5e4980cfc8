import HeraldCore
import HeraldPayload

/// How a claimed recipient leaves (docs/many-apps.md): with its app's headers (`apns-topic`, the
/// job's priority, collapse id and expiration) through the connection pool of its app and
/// environment. Indexed by the state file's app number; a job without `apns.apps` has one app
/// and one pool.
struct SendRoutes {
    /// By app number; nil: a number the job has no app for (the run refuses to start then).
    private let headers: [RenderedHeaders?]
    /// By app number × 2 + environment; -1: none.
    private let pools: [Int]
    /// By app number: the app's name ("" for a job without `apns.apps`) and bundle id (`topic`
    /// as configured: the frequency ledger's).
    let names: [String]
    let bundles: [String]
    /// The job's apps' numbers.
    let apps: [Int]
    /// By pool: the numbers of the apps it sends for, and how messages name it.
    private let poolApps: [[Int]]
    private let poolNames: [String]

    /// One app, one pool.
    init(single shared: RenderedHeaders, bundle: String) {
        headers = [shared]
        pools = [0, 0]
        names = [""]
        bundles = [bundle]
        apps = [0]
        poolApps = [[0]]
        poolNames = ["the connections"]
    }

    /// `headers`: each of the job's apps' (in `routing.apps` order); `poolOfApp`, `poolNames`: `DeliveryTarget`'s.
    init(routing: AppRouting, headers byApp: [RenderedHeaders], poolOfApp: [[Int]], poolNames: [String]) {
        let count = Int(routing.numbers.max() ?? 0) + 1
        var headers = [RenderedHeaders?](repeating: nil, count: count)
        var pools = [Int](repeating: -1, count: count * 2)
        var names = [String](repeating: "", count: count)
        var bundles = [String](repeating: "", count: count)
        for (i, number) in routing.numbers.enumerated() {
            headers[Int(number)] = byApp[i]
            names[Int(number)] = routing.apps[i].name
            bundles[Int(number)] = routing.apps[i].topic
            for environment in APNsEnvironment.allCases { pools[Int(number) * 2 + environment.rawValue] = poolOfApp[i][environment.rawValue] }
        }
        self.headers = headers
        self.pools = pools
        self.names = names
        self.bundles = bundles
        apps = routing.numbers.map { Int($0) }
        var poolApps = [[Int]](repeating: [], count: poolNames.count)
        for (i, number) in routing.numbers.enumerated() {
            for p in Set(poolOfApp[i]) where p >= 0 { poolApps[p].append(Int(number)) }
        }
        self.poolApps = poolApps
        self.poolNames = poolNames
    }

    /// Routes (`route(app:environment:)`) run from 0 to this.
    var routeCount: Int { names.count * 2 }

    /// The apps a pool sends for (by number).
    func apps(inPool pool: Int) -> [Int] { pool < poolApps.count ? poolApps[pool] : apps }

    /// How log lines name a pool: `the pool of acme, acme-ipad (production)`.
    func poolName(_ pool: Int) -> String { pool < poolNames.count ? poolNames[pool] : "pool \(pool)" }

    /// An app and environment as one key (`app × 2 + environment`).
    static func route(app: Int, environment: Int) -> Int { app * 2 + environment }
    static func appAndEnvironment(route: Int) -> (app: Int, environment: Int) { (route / 2, route % 2) }
    static func routes(app: Int) -> [Int] { APNsEnvironment.allCases.map { route(app: app, environment: $0.rawValue) } }

    /// For a message about one app and environment of a job with several: ` (app acme, sandbox)`.
    func environmentNote(route: Int) -> String {
        guard apps.count > 1 || poolNames.count > 1 else { return "" }
        let (app, environment) = Self.appAndEnvironment(route: route)
        let name = names[app].isEmpty ? "" : "app \(names[app]), "
        return " (\(name)\(environment == 1 ? "sandbox" : "production"))"
    }

    /// The headers of the app with this number. Every claimed recipient's app is the job's: the
    /// run checks that before sending.
    @inline(__always) func headers(app: Int) -> RenderedHeaders { headers[app]! }

    /// The pool of an app and environment (0 when the job sends to one environment only, and the
    /// row somehow names the other: never, as rows take the job's environment then).
    @inline(__always) func pool(app: Int, environment: Int) -> Int { max(0, pools[app * 2 + environment]) }
}
