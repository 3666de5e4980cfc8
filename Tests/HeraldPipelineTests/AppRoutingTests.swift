import Foundation
import HeraldCore
import HeraldPayload
@testable import HeraldPipeline
import HeraldState
import Logging
import Testing

/// Each row's app and environment (`AppRouting`), and how a claimed recipient leaves (`SendRoutes`).
@Suite struct AppRoutingTests {
    func job(environmentField: String? = "env", endpoint: APNsEndpoint = .production) -> JobSpec {
        var spec = JobSpec(jobFile: "job.yaml", campaign: "c", audience: AudienceSpec(files: []),
                           apns: APNsSpec(endpoint: endpoint, topic: "com.acme.app", auth: nil),
                           push: PushSpec(type: .alert, priority: 10, template: .object([])), throttle: ThrottleSpec(), retry: RetrySpec(),
                           statePath: "/nonexistent/c.sqlite", reports: ReportsSpec(dir: "/nonexistent"))
        spec.apns.apps = [AppSpec(name: "acme", topic: "com.acme.app"), AppSpec(name: "partner", topic: "com.partner.app")]
        spec.audience.appField = "app"
        spec.audience.environmentField = environmentField
        return spec
    }

    /// A row as the reader hands it over: the app and environment fields' values carried as text
    /// (null and "" are no value).
    func record(_ fields: [String: FieldValue]) throws -> AudienceRecord {
        func text(_ name: String) -> String? {
            switch fields[name] {
            case nil, .null?, .string("")?: return nil
            case let v?: return v.text
            }
        }
        return AudienceRecord(location: RowLocation(file: "a.csv", line: 7), token: try DeviceToken.normalize(String(repeating: "ab", count: 32)).get(),
                              fields: fields, app: text("app"), environment: text("env"))
    }

    @Test func rowsNameTheirAppAndEnvironment() throws {
        // The state file numbers partner 0 and acme 3 (a run that has seen other apps).
        let routing = AppRouting(job: job(), numbers: [3, 0])
        guard case .route(let app, let environment) = routing.route(try record(["app": .string("acme"), "env": .string("sandbox")])) else {
            Issue.record("not routed"); return
        }
        #expect(app == 3 && environment == .sandbox)
        guard case .route(let p, let e) = routing.route(try record(["app": .string("partner"), "env": .string("")])) else {
            Issue.record("not routed"); return
        }
        #expect(p == 0 && e == .production, "an empty environment is the endpoint's")
        #expect(routing.app(number: 3)?.name == "acme" && routing.app(number: 0)?.name == "partner" && routing.app(number: 1) == nil)
    }

    @Test func badRowsAreInvalidWithTheirReason() throws {
        let routing = AppRouting(job: job())
        let cases: [([String: FieldValue], InvalidRowReason, String, String)] = [
            (["app": .string("acme-watch")], .unknownApp, "app", "app \"acme-watch\" (field app) is not one of apns.apps: acme, partner"),
            ([:], .missingField, "app", "field app is missing"),
            (["app": .null], .missingField, "app", "field app is missing"),
            (["app": .string("acme"), "env": .string("staging")], .badFieldValue, "env", "takes production or sandbox"),
        ]
        for (fields, reason, field, detail) in cases {
            guard case .invalid(let row) = routing.route(try record(fields)) else { Issue.record("routed: \(fields)"); continue }
            #expect(row.reason == reason && row.field == field && row.detail.contains(detail) && row.location.line == 7, "\(row)")
        }
    }

    @Test func withoutAnEnvironmentFieldEveryRowGoesToTheEndpoints() throws {
        let routing = AppRouting(job: job(environmentField: nil, endpoint: .sandbox))
        guard case .route(_, let environment) = routing.route(try record(["app": .string("partner"), "env": .string("production")])) else {
            Issue.record("not routed"); return
        }
        #expect(environment == .sandbox)
    }

    @Test func eachAppLeavesThroughItsPoolWithItsTopic() throws {
        let routing = AppRouting(job: job(), numbers: [1, 0])
        func headers(_ topic: String) -> RenderedHeaders {
            RenderedHeaders(apnsId: "", pushType: .alert, topic: topic, priority: 10, expiration: .unset, collapseId: nil)
        }
        // acme (number 1) in pools 0 (production) and 2 (sandbox); partner (0) in 1 and 2... as DeliveryTarget lays them out.
        let routes = SendRoutes(routing: routing, headers: [headers("com.acme.app"), headers("com.partner.app")],
                                poolOfApp: [[0, 2], [1, 3]], poolNames: ["p0", "p1", "p2", "p3"])
        #expect(routes.headers(app: 1).topic == "com.acme.app" && routes.headers(app: 0).topic == "com.partner.app")
        #expect(routes.pool(app: 1, environment: 0) == 0 && routes.pool(app: 1, environment: 1) == 2)
        #expect(routes.pool(app: 0, environment: 0) == 1 && routes.pool(app: 0, environment: 1) == 3)
        #expect(routes.apps(inPool: 2) == [1] && routes.apps.sorted() == [0, 1] && routes.names == ["partner", "acme"])
        #expect(SendRoutes.appAndEnvironment(route: SendRoutes.route(app: 5, environment: 1)) == (5, 1))
    }
}

/// Which suppression list a recipient's 410 feeds and is checked against: its app's topic in its
/// environment, named as the job's endpoint for the default environment, as every list before
/// `apns.apps` was.
@Suite struct SuppressionScopeTests {
    func runner(endpoint: APNsEndpoint, apps: [AppSpec] = [], endpoints: [APNsEnvironment: String] = [:]) -> CampaignRunner {
        var spec = JobSpec(jobFile: "job.yaml", campaign: "c", audience: AudienceSpec(files: []),
                           apns: APNsSpec(endpoint: endpoint, topic: "com.acme.app", auth: nil),
                           push: PushSpec(type: .alert, priority: 10, template: .object([])), throttle: ThrottleSpec(), retry: RetrySpec(),
                           statePath: "/nonexistent/c.sqlite", reports: ReportsSpec(dir: "/nonexistent"))
        spec.apns.apps = apps
        spec.apns.endpoints = endpoints
        if !apps.isEmpty { spec.audience.appField = "app" }
        return CampaignRunner(spec: spec, logger: Logger(label: "test"))
    }

    @Test func aSandboxJobWithOneAppKeepsTheSandboxList() {
        let r = runner(endpoint: .sandbox)
        let app = r.spec.apns.appList[0]
        // Its recipients' stored environment does not matter: an unrouted run sends to the endpoint.
        for e in APNsEnvironment.allCases {
            #expect(r.suppressionScope(app: app, environment: e, routed: false) == .init(environment: "sandbox", topic: "com.acme.app"))
        }
    }

    @Test func routedRecipientsUseTheirEnvironmentsList() {
        let r = runner(endpoint: .production, apps: [AppSpec(name: "acme", topic: "com.acme.app"), AppSpec(name: "b", topic: "com.b")],
                       endpoints: [.sandbox: "https://127.0.0.1:9"])
        #expect(r.suppressionScope(app: r.spec.apns.apps[1], environment: .production, routed: true) == .init(environment: "production", topic: "com.b"))
        #expect(r.suppressionScope(app: r.spec.apns.apps[1], environment: .sandbox, routed: true)
                == .init(environment: "https://127.0.0.1:9", topic: "com.b"), "a rehearsal's list is its host's, not Apple's sandbox")
    }
}
