import Foundation
import HeraldCore
import HeraldPayload
import HeraldPipeline
import HeraldState

/// Writes `herald preview`'s output: a job line, then one block per audience row. Device tokens
/// are shortened (personal data); row problems name file, line and reason as `invalid.csv` does.
final class PreviewPrinter {
    let spec: JobSpec
    let payloads: PayloadRenderer
    let headers: HeaderRenderer
    /// `experiment`: each row's arm and its variant's templates.
    let experiment: ExperimentRenderers?
    /// The send time the preview assumes for `apns-expiration` relative to sending.
    let now: Int
    private(set) var printedAny = false
    private var out = ""

    /// `schedule`: each row's due time if the run started now.
    private let planner: DuePlanner?
    /// The per-device budgets' ledger beside the state file, read only, when it exists.
    private let ledger: SharedStore?
    /// Whether the ledger has this herald's schema; the preview never migrates it.
    private let ledgerIsCurrent: Bool
    /// `apns.apps`, `audience.environment_field`: each row's app and environment.
    private let routing: AppRouting?

    init(spec: JobSpec, payloads: PayloadRenderer, headers: HeaderRenderer, experiment: ExperimentRenderers?, now: Int) {
        self.spec = spec; self.payloads = payloads; self.headers = headers; self.experiment = experiment; self.now = now
        let started = Date(timeIntervalSince1970: Double(now))
        planner = spec.schedule.map { DuePlanner(spec: $0, period: $0.dailyPeriod(campaign: CampaignName(spec.campaign), runStarted: started)) }
        let shared = ((spec.statePath as NSString).deletingLastPathComponent as NSString).appendingPathComponent(SharedStore.fileName)
        // A state directory on a network filesystem the job has not accepted is not read: the preview goes without the ledger.
        let volume = try? StateVolume(job: spec)
        ledger = !spec.deviceCaps().isEmpty && FileManager.default.fileExists(atPath: shared)
            ? volume.flatMap { try? SharedStore(path: shared, readOnly: true, volume: $0) } : nil
        ledgerIsCurrent = ledger?.isCurrent ?? true
        routing = spec.isRouted ? AppRouting(job: spec) : nil
    }

    func printJob() {
        let p = spec.push
        write("job       \(spec.jobFile)  (campaign \(spec.campaign))")
        let priority = p.priorityTemplate.map { "priority \($0) per recipient" } ?? "priority \(p.priority)"
        let topic = spec.apns.apps.isEmpty ? "topic \(headers.topic)" : "each app's topic"
        write("push      \(p.type.rawValue), \(priority), \(topic), payload limit \(payloads.limit) bytes, "
              + "missing_field \(p.missingField.rawValue), oversize \(p.oversize.rawValue)")
        if !p.locales.isEmpty {
            write("locales   \(p.locales.map(\.locale).joined(separator: ", ")) (field \(spec.audience.localeField ?? "none: audience.locale_field is not set"))")
        }
        if spec.isRouted {
            for app in spec.apns.appList {
                let name = app.name.isEmpty ? "" : "\(app.name): "
                let environments = spec.audience.environmentField != nil || spec.apns.environmentFallback
                    ? APNsEnvironment.allCases : [spec.apns.defaultEnvironment]
                write("app       \(name)topic \(app.topic), " + environments.map { "\($0.name) \(Self.endpoint(spec, $0))" }.joined(separator: ", "))
            }
        }
        if let e = spec.experiment {
            let share = e.testShare.map { "test_share \(ExperimentSpec.percentText($0))" } ?? "no test_share (every recipient gets a variant)"
            write("experiment \(share), holdout \(ExperimentSpec.percentText(e.holdout)), variants "
                  + e.variants.map { "\($0.name) (weight \($0.weight))" }.joined(separator: ", ") + ", winner \(e.winner ?? "not chosen")")
        }
        flush()
    }

    func print(_ event: AudienceEvent) {
        printedAny = true
        write("")
        switch event {
        case .invalid(let row):
            let field = row.field.isEmpty ? "" : " (\(row.field))"
            write("── \(row.location): invalid row, not sent: \(row.reason.rawValue)\(field): \(row.detail)")
        case .record(let record):
            printRecipient(record)
        }
        flush()
    }

    func printFooter(recipients: Int, rowsRead: Int) {
        write("")
        write("\(recipients) recipient\(recipients == 1 ? "" : "s") shown from the first \(rowsRead) audience row\(rowsRead == 1 ? "" : "s"); nothing was sent")
        flush()
    }

    private func printRecipient(_ record: AudienceRecord) {
        var app: AppSpec?
        var environment = spec.apns.defaultEnvironment
        if let routing {
            switch routing.route(record) {
            case .invalid(let row):
                let field = row.field.isEmpty ? "" : " (\(row.field))"
                write("── \(row.location): invalid row, not sent: \(row.reason.rawValue)\(field): \(row.detail)")
                return
            case .route(let number, let e):
                app = routing.app(number: Int(number))
                environment = e
            }
        }
        var payloads = self.payloads, headers = self.headers
        var arm: String?
        if let experiment {
            let names = experiment.names
            var variant: Int?
            switch experiment.assigner.arm(of: record.token) {
            case .variant(let i): variant = i; arm = "variant   \(names[i]) (test)"
            case .holdout: arm = "variant   holdout: not sent (held_out)"
            case .rollout:
                if let w = experiment.spec.winnerIndex { variant = w; arm = "variant   \(names[w]) (winner, rollout)" }
                else { arm = "variant   none yet: waiting for the winner (awaiting_winner)" }
            }
            guard let i = variant else {
                write("── \(record.location) · token \(Self.shortened(record.token.hex))")
                write(arm!)
                return
            }
            payloads = experiment.payloads[i]; headers = experiment.headers[i]
        }
        let locale = spec.audience.localeField.flatMap { record.fields[$0]?.text }
        var title = spec.isBroadcast ? "── \(record.location) · channel \(record.token.hex)"
            : "── \(record.location) · token \(Self.shortened(record.token.hex))"
        if spec.audience.localeField != nil {
            title += " · locale \(locale.map { $0.isEmpty ? "(empty)" : $0 } ?? "(none)") → \(payloads.templateSource(for: locale))"
        }
        if let id = spec.audience.idField.flatMap({ record.fields[$0]?.text }), !id.isEmpty { title += " · id \(id)" }
        write(title)
        if let app {
            let name = app.name.isEmpty ? "" : "\(app.name), "
            write("app       \(name)topic \(app.topic), \(environment.name) \(Self.endpoint(spec, environment))")
        }
        if let arm { write(arm) }
        if let line = policyLine(record, topic: app?.topic ?? headers.topic) { write(line) }

        let rendered: RenderedHeaders
        switch headers.render(record) {
        case .headers(let h): rendered = h
        case .skip(let field): write("not sent: field \(field) is missing (missing_field: skip_recipient)"); return
        case .failure(let reason, let field, let detail): write(Self.rowError(record, reason, field, detail)); return
        }
        switch payloads.render(record, locale: locale) {
        case .payload(let bytes):
            var rendered = rendered
            if let app { rendered.topic = (try? spec.push.type.topic(for: app.topic).get()) ?? app.topic }
            for (name, value) in spec.isBroadcast ? broadcastFields(record, rendered) : rendered.fields(sentAt: now) {
                write("\(name): \(value)\(name == "apns-expiration" ? Self.expirationNote(rendered.expiration) : "")")
            }
            write("payload: \(bytes.count) bytes (limit \(payloads.limit))")
            write(PrettyJSON.format(bytes))
        case .skip(let field):
            write("not sent: field \(field) is missing (missing_field: skip_recipient)")
        case .failure(let reason, let field, let detail):
            write(Self.rowError(record, reason, field, detail))
        }
    }

    /// What the sender sends for a channel (`FieldBlock`, `PushDestination.broadcasts`): its path, the channel, the recipient's id as
    /// `apns-request-id`, and the required expiration (0 unless the job sets one); no topic.
    private func broadcastFields(_ record: AudienceRecord, _ h: RenderedHeaders) -> [(name: String, value: String)] {
        [(":path", "/4/broadcasts/apps/\(headers.bundleId)"), ("apns-channel-id", record.token.hex), ("apns-request-id", h.apnsId),
         ("apns-push-type", h.pushType.rawValue), ("apns-priority", String(h.priority)),
         ("apns-expiration", String(h.expirationValue(sentAt: now) ?? 0))]
    }

    /// The recipient's time zone and due time (`schedule`) and its frequency-cap verdict, if the
    /// run started now: `schedule  Europe/Paris · due 2026-12-01T08:00:00Z · capped: 3 pushes in the last 24h`.
    private func policyLine(_ record: AudienceRecord, topic: String) -> String? {
        var parts: [String] = []
        if let planner {
            var name = planner.spec.defaultTimezone
            if let field = spec.audience.timezoneField, let v = record.fields[field]?.text, !v.isEmpty { name = v }
            if let zone = TimeZoneText.zone(name) {
                switch planner.due(in: zone, after: Date(timeIntervalSince1970: Double(now))) {
                case .at(let d) where d.timeIntervalSince1970 <= Double(now): parts.append("\(name) · due now")
                case .at(let d): parts.append("\(name) · due \(Self.iso(d))")
                case .never: parts.append("\(name) · not sent: window_missed")
                }
            } else {
                parts.append("\(name) · invalid row, not sent: bad_field_value (not a time zone)")
            }
        }
        for cap in spec.deviceCaps() {
            let name = cap.isSilentBudget ? "silent-push budget" : "frequency cap \(cap.category)"
            if !ledgerIsCurrent {
                parts.append("\(name): not checked (\(SharedStore.fileName) is from an older herald; the next run upgrades it)")
                continue
            }
            var verdict = "\(name): room"
            for limit in cap.limits {
                let n = (try? ledger?.pushCount(cap, topic: topic, token: record.token.hex,
                                                window: Double(limit.per), now: Date(timeIntervalSince1970: Double(now)))) ?? 0
                if n >= limit.max {
                    let what = cap.isSilentBudget ? "over the silent-push budget" : "capped"
                    verdict = "\(what): \(n) push\(n == 1 ? "" : "es") in the last \(DurationText.text(limit.per)) (\(cap.overCap == .skip ? "skipped" : "deferred"))"
                    break
                }
            }
            parts.append(verdict)
        }
        return parts.isEmpty ? nil : (spec.schedule != nil ? "schedule  " : "") + parts.joined(separator: " · ")
    }

    static func iso(_ date: Date) -> String { UTCText.seconds(date) }

    private static func rowError(_ record: AudienceRecord, _ reason: InvalidRowReason, _ field: String, _ detail: String) -> String {
        "not sent: \(record.location): \(reason.rawValue)\(field.isEmpty ? "" : " (\(field))"): \(detail)"
    }

    private static func expirationNote(_ expiration: ExpirationSpec) -> String {
        switch expiration {
        case .unset: return ""
        case .immediate: return "  (0: delivered once, not stored)"
        case .relative(let s): return "  (\(s) s after sending; shown for a send now)"
        case .absolute: return "  (UNIX time)"
        }
    }

    /// First 8 and last 4 hex digits: enough to find the row, not enough to push to it.
    static func shortened(_ hex: String) -> String {
        hex.count <= 12 ? hex : "\(hex.prefix(8))…\(hex.suffix(4))"
    }

    private func write(_ line: String) { out += line + "\n" }

    private func flush() {
        FileHandle.standardOutput.write(Data(out.utf8))
        out = ""
    }

    /// Where an environment's pushes go: its URL, or the in-process simulator.
    static func endpoint(_ spec: JobSpec, _ environment: APNsEnvironment) -> String {
        spec.apns.baseURL(for: environment) ?? "(the in-process simulator)"
    }
}
