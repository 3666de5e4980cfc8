import Foundation
import Crypto
import HeraldCore

/// Renders the APNs headers of each recipient: `apns-id`, `apns-push-type`, `apns-topic`,
/// `apns-priority`, `apns-expiration` and `apns-collapse-id`.
///
/// Push type and topic are per job: the payload rules depend on the push type, and a connection
/// sends one app's topics. Priority, expiration and collapse id are per job or templated per
/// recipient. Every rule that can be checked without a row is checked in `init` (exit 2); what
/// depends on the row is a per-recipient `bad_field_value`, found before anything is sent.
/// Immutable after `init`: one instance serves all threads.
public final class HeaderRenderer: Sendable {
    public let campaign: String
    public let pushType: PushType
    /// `apns.topic` as configured, without the push type's suffix (what the simulator expects as bundle id).
    public let bundleId: String
    /// The `apns-topic` every request carries.
    public let topic: String
    private let missingField: MissingFieldPolicy
    private let apnsIds: APNsIdGenerator
    private let priority: Int
    private let priorityTemplate: HeaderTemplate?
    private let expiration: ExpirationSpec
    private let expirationTemplate: HeaderTemplate?
    private let collapseId: String?
    private let collapseTemplate: HeaderTemplate?

    /// Apple: "apns-collapse-id … must not exceed 64 bytes" (400 BadCollapseId;
    /// https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
    public static let maximumCollapseIdBytes = 64

    /// For a run starting now: a `{date}`/`{week}`/`{month}` campaign name is resolved as a run
    /// starting at this moment would resolve it.
    public convenience init(job: JobSpec, now: Date = Date()) throws(PayloadTemplateError) {
        try self.init(push: job.push, topic: job.apns.topic, campaign: CampaignName(job.campaign).resolved(at: now))
    }

    public init(push: PushSpec, topic configured: String, campaign: String) throws(PayloadTemplateError) {
        self.campaign = campaign
        apnsIds = APNsIdGenerator(seed: campaign)
        pushType = push.type
        missingField = push.missingField
        switch push.type.topic(for: configured) {
        case .success(let t): topic = t
        case .failure(let problem): throw .header(key: "apns.topic", problem: problem.description)
        }
        let suffix = push.type.topicSuffix
        bundleId = push.type != .mdm && !suffix.isEmpty && configured.hasSuffix(suffix) ? String(configured.dropLast(suffix.count)) : configured

        if let problem = push.type.priorityProblem(push.priority) { throw .header(key: "push.priority", problem: problem) }
        priority = push.priority
        if let text = push.priorityTemplate {
            if push.type == .background { throw .header(key: "push.priority", problem: "must be 5 for background pushes, not a placeholder") }
            priorityTemplate = try HeaderTemplate(key: "push.priority", text: text)
        } else {
            priorityTemplate = nil
        }

        expiration = push.expiration
        if let text = push.expirationTemplate {
            expirationTemplate = try HeaderTemplate(key: "push.expiration", text: text)
        } else {
            expirationTemplate = nil
        }

        switch push.collapseId {
        case .none:
            collapseId = nil; collapseTemplate = nil
        case .auto:
            collapseId = Self.automaticCollapseId(campaign: campaign); collapseTemplate = nil
        case .fixed(let text):
            let template = try HeaderTemplate(key: "push.collapse_id", text: text)
            let literal = template.literalText
            if HeaderTemplate.hasControl(literal) {
                throw .header(key: "push.collapse_id", problem: "must not contain control characters")
            }
            if literal.utf8.count > Self.maximumCollapseIdBytes {
                throw .header(key: "push.collapse_id", problem: "is \(literal.utf8.count) bytes without its placeholders; "
                              + "Apple allows at most \(Self.maximumCollapseIdBytes) (BadCollapseId)")
            }
            if template.hasPlaceholders {
                collapseId = nil; collapseTemplate = template
            } else {
                collapseId = literal.isEmpty ? nil : literal; collapseTemplate = nil
            }
        }
    }

    /// True when a header depends on the recipient's row (collapse id, priority or expiration
    /// templated); otherwise every recipient gets `shared` with its own `apns-id`.
    public var variesPerRecipient: Bool { priorityTemplate != nil || expirationTemplate != nil || collapseTemplate != nil }

    /// The headers every recipient shares when `variesPerRecipient` is false (`apns-id` empty).
    public var shared: RenderedHeaders {
        RenderedHeaders(apnsId: "", pushType: pushType, topic: topic, priority: priority, expiration: expiration, collapseId: collapseId)
    }

    public func render(_ record: AudienceRecord) -> HeaderOutcome {
        var headers = shared
        headers.apnsId = apnsIds.id(for: record.token)

        if let template = priorityTemplate {
            switch template.render(record, policy: missingField) {
            case .skip(let field): return .skip(field: field)
            case .failure(let field, let detail): return .failure(reason: .missingField, field: field, detail: detail)
            case .text(let text):
                let trimmed = text.trimmingASCII(" \t")
                if trimmed.isEmpty { break }   // `missing_field: empty`: the job's default priority
                guard let value = Int(trimmed), pushType.priorityProblem(value) == nil else {
                    return .failure(reason: .badFieldValue, field: template.field,
                                    detail: "push.priority is \(Self.quoted(text)), not one of \(pushType.allowedPriorities.map(String.init).joined(separator: ", ")) for \(pushType.rawValue) pushes")
                }
                headers.priority = value
            }
        }

        if let template = expirationTemplate {
            switch template.render(record, policy: missingField) {
            case .skip(let field): return .skip(field: field)
            case .failure(let field, let detail): return .failure(reason: .missingField, field: field, detail: detail)
            case .text(let text):
                if text.trimmingASCII(" \t").isEmpty { break }   // `missing_field: empty`: no header
                guard let value = ExpirationText.parse(text) else {
                    return .failure(reason: .badFieldValue, field: template.field,
                                    detail: "push.expiration is \(Self.quoted(text)), not \(ExpirationText.expected)")
                }
                headers.expiration = value
            }
        }

        if let template = collapseTemplate {
            switch template.render(record, policy: missingField) {
            case .skip(let field): return .skip(field: field)
            case .failure(let field, let detail): return .failure(reason: .missingField, field: field, detail: detail)
            case .text(let text):
                if HeaderTemplate.hasControl(text) {
                    return .failure(reason: .badFieldValue, field: template.field,
                                    detail: "push.collapse_id \(Self.quoted(text)) has a control character, which a header cannot carry")
                }
                if text.utf8.count > Self.maximumCollapseIdBytes {
                    return .failure(reason: .badFieldValue, field: template.field,
                                    detail: "push.collapse_id is \(text.utf8.count) bytes for this recipient; Apple allows at most \(Self.maximumCollapseIdBytes) (BadCollapseId)")
                }
                headers.collapseId = text.isEmpty ? nil : text
            }
        }
        return .headers(headers)
    }

    // MARK: - Identity

    /// `collapse_id: auto`: one id per campaign, so a device shows a resent notification once;
    /// a campaign name too long for 64 bytes is hashed.
    public static func automaticCollapseId(campaign: String) -> String {
        let name = "herald:" + campaign
        if name.utf8.count <= maximumCollapseIdBytes { return name }
        let digest = Array(SHA256.hash(data: Array(campaign.utf8)).prefix(16))
        var out = Array("herald:".utf8)
        for b in digest { out.append(HexDigits.lowercase[Int(b >> 4)]); out.append(HexDigits.lowercase[Int(b & 0xF)]) }
        return String(decoding: out, as: UTF8.self)
    }

    private static func quoted(_ text: String) -> String {
        var out: [UInt8] = []
        JSONEscaping.appendQuoted(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
