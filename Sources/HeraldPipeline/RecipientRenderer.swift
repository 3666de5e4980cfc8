import HeraldCore
import HeraldPayload
import HeraldState

/// What an audience record becomes: the payload and own headers a recipient is sent, or the
/// invalid row it is reported as. The one place `herald run`'s ingest and `herald validate`'s
/// scan render a record, so the counts `validate` prints are the ones the run finds.
struct RecipientRenderer {
    enum Outcome {
        /// `headers` only when the job templates them per recipient; nil: the job's. `registeredAt`:
        /// `audience.registered_at_field` in ms since the epoch, when the job names it and the row has it.
        /// `due`: the row's time zone and due time, when the job has a `schedule`.
        /// `arm`: the recipient's arm of the job's `experiment` (nil: no experiment).
        /// `route`: its app and environment (`AppRouting`).
        case recipient(payload: [UInt8], headers: RecipientHeaders?, registeredAt: Int64?, due: (zone: String, dueAt: Double)? = nil,
                       arm: Arm? = nil, route: Route = Route())
        case invalid(InvalidRow)
    }

    typealias Arm = ExperimentArm

    /// A recipient's app (the state file's number) and environment.
    struct Route: Equatable {
        var app: UInt16 = 0
        var environment: APNsEnvironment = .production
    }

    let payload: PayloadRenderer
    let headers: HeaderRenderer
    let localeField: String?
    /// `audience.registered_at_field`: a value that is not a time makes the row invalid (`bad_field_value`).
    var registeredAtField: String? = nil
    /// `schedule`: each row's zone and due time; nil: no schedule.
    var dueTimes: DueTimes? = nil
    /// `experiment`: each row's arm, and the variants' templates.
    var experiment: ExperimentRenderers? = nil
    /// `apns.apps` and `audience.environment_field`: each row's app and environment, decided
    /// first (a row for an app the job does not have is not rendered); nil: the one app.
    var routing: AppRouting? = nil
    /// Every row's app and environment when there is no `routing`: the one app's number and the
    /// job's `endpoint`'s environment (the suppression list a sandbox job's 410s go to is the sandbox's).
    var defaultRoute = Route()

    /// Fields every recipient's payload needs (`PayloadRenderer.fieldsEveryRowNeeds`; with an
    /// experiment, those every variant needs).
    var fieldsEveryRowNeeds: [(column: String, usedBy: String)] { experiment?.fieldsEveryRowNeeds ?? payload.fieldsEveryRowNeeds }

    func render(_ record: AudienceRecord) -> Outcome {
        guard let routing else { return render(record, route: defaultRoute) }
        switch routing.route(record) {
        case .invalid(let row): return .invalid(row)
        case .route(let app, let environment): return render(record, route: Route(app: app, environment: environment))
        }
    }

    private func render(_ record: AudienceRecord, route: Route) -> Outcome {
        var due: (zone: String, dueAt: Double)?
        if let dueTimes {
            switch dueTimes.resolve(record) {
            case .due(let zone, let dueAt): due = (zone, dueAt)
            case .invalid(let row): return .invalid(row)
            }
        }
        var registeredAt: Int64?
        if let field = registeredAtField, let value = record.registeredAt {
            switch RegistrationTime.milliseconds(value) {
            case .success(let ms): registeredAt = ms
            case .failure(let failure):
                return .invalid(InvalidRow(location: record.location, reason: .badFieldValue, field: field,
                                           detail: "audience.registered_at_field \(field): \(failure.message)"))
            }
        }
        let locale = localeField.flatMap { record.fields[$0]?.text }
        if let experiment { return render(record, locale: locale, experiment: experiment, registeredAt: registeredAt, due: due, route: route) }
        switch renderVariant(record, locale: locale, payload: payload, headers: headers, own: false) {
        case .failure(let row): return .invalid(row)
        case .success(let (bytes, headers)): return .recipient(payload: bytes, headers: headers, registeredAt: registeredAt, due: due, route: route)
        }
    }

    /// An experiment's row: rendered with its own variant's templates; one waiting for a winner
    /// not chosen yet, with every variant's (any of them may win); a held-out row too, so that the
    /// holdout holds only recipients the campaign could have sent, and keeps no payload.
    private func render(_ record: AudienceRecord, locale: String?, experiment: ExperimentRenderers, registeredAt: Int64?,
                        due: (zone: String, dueAt: Double)?, route: Route) -> Outcome {
        let arm = experiment.assigner.arm(of: record.token)
        let single: (index: Int, rollout: Bool)?
        switch arm {
        case .variant(let i): single = (i, false)
        case .rollout: single = experiment.spec.winnerIndex.map { ($0, true) }
        case .holdout: single = nil
        }
        if let (i, rollout) = single {
            switch renderVariant(record, locale: locale, payload: experiment.payloads[i], headers: experiment.headers[i], own: experiment.ownHeaders[i]) {
            case .failure(let row): return .invalid(row)
            case .success(let (bytes, headers)):
                return .recipient(payload: bytes, headers: headers, registeredAt: registeredAt, due: due,
                                  arm: rollout ? experiment.rolloutArms[i] : experiment.testArms[i], route: route)
            }
        }
        var alternatives: [VariantPayload] = []
        for (i, name) in experiment.names.enumerated() {
            switch renderVariant(record, locale: locale, payload: experiment.payloads[i], headers: experiment.headers[i], own: experiment.ownHeaders[i]) {
            case .failure(let row): return .invalid(row)
            case .success(let (bytes, headers)): alternatives.append(VariantPayload(variant: name, payload: bytes, headers: headers))
            }
        }
        if arm == .holdout {
            return .recipient(payload: [], headers: nil, registeredAt: registeredAt, due: due, arm: experiment.holdoutArm, route: route)
        }
        return .recipient(payload: [], headers: nil, registeredAt: registeredAt, due: due,
                          arm: Arm(variant: nil, rollout: true, alternatives: alternatives), route: route)
    }

    private enum Rendered {
        case success(([UInt8], RecipientHeaders?))
        case failure(InvalidRow)
    }

    /// A payload and its headers, the job's or one variant's: the recipient's own headers when
    /// they vary per recipient or a variant's differ from the job's (`own`: each variant's
    /// automatic collapse id), else nil (the job's are sent).
    private func renderVariant(_ record: AudienceRecord, locale: String?, payload: PayloadRenderer,
                               headers: HeaderRenderer, own: Bool) -> Rendered {
        let bytes: [UInt8]
        switch payload.render(record, locale: locale) {
        case .payload(let rendered): bytes = rendered
        case .skip(let field): return .failure(Self.skipped(record, field))
        case .failure(let reason, let field, let detail):
            return .failure(InvalidRow(location: record.location, reason: reason, field: field, detail: detail))
        }
        guard headers.variesPerRecipient else {
            guard own else { return .success((bytes, nil)) }
            let h = headers.shared
            return .success((bytes, RecipientHeaders(priority: h.priority, collapseId: h.collapseId, expiration: h.expiration)))
        }
        switch headers.render(record) {
        case .headers(let h): return .success((bytes, RecipientHeaders(priority: h.priority, collapseId: h.collapseId, expiration: h.expiration)))
        case .skip(let field): return .failure(Self.skipped(record, field))
        case .failure(let reason, let field, let detail):
            return .failure(InvalidRow(location: record.location, reason: reason, field: field, detail: detail))
        }
    }

    static func skipped(_ record: AudienceRecord, _ field: String) -> InvalidRow {
        InvalidRow(location: record.location, reason: .missingField, field: field,
                   detail: "field \(field) is missing; recipient skipped (missing_field: skip_recipient)")
    }
}
