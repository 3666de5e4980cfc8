import HeraldCore
import HeraldPayload
import HeraldState

/// An experiment's templates compiled once per run: a payload and a header renderer per variant,
/// and the assigner that puts each token in an arm. Every variant's template is validated here,
/// as `push.template` is, so one bad variant stops the job (exit 2) before anything is read.
public final class ExperimentRenderers: Sendable {
    public let spec: ExperimentSpec
    public let assigner: ExperimentAssigner
    public let payloads: [PayloadRenderer]
    public let headers: [HeaderRenderer]
    /// Whether variant i's headers differ from the job's own (`collapse_id: auto`: each variant
    /// has its own id): then each of its recipients keeps its headers in its staged row;
    /// otherwise the row keeps none and the job's are sent, as without an experiment.
    let ownHeaders: [Bool]
    public let names: [String]
    /// The arms every test or rollout recipient of a variant shares, and the holdout's, made once:
    /// one object per row would be an allocation per recipient.
    let testArms: [ExperimentArm]
    let rolloutArms: [ExperimentArm]
    let holdoutArm = ExperimentArm(variant: ExperimentSpec.holdoutName, rollout: false)

    /// `campaign`: the run's resolved name (the assignment's key, and each variant's automatic collapse id).
    public init(job: JobSpec, experiment: ExperimentSpec, campaign: String) throws(PayloadTemplateError) {
        spec = experiment
        assigner = ExperimentAssigner(experiment: experiment, campaign: campaign)
        var payloads: [PayloadRenderer] = [], headers: [HeaderRenderer] = []
        for (i, variant) in experiment.variants.enumerated() {
            let push = experiment.push(i, of: job.push)
            payloads.append(try PayloadRenderer(push: push, section: "experiment.variants.\(variant.name)"))
            // `collapse_id: auto` gives each variant its own id: a device that gets one variant
            // and, after an ambiguous failure, the same one again shows it once.
            headers.append(try HeaderRenderer(push: push, topic: job.apns.topic, campaign: "\(campaign):\(variant.name)"))
        }
        self.payloads = payloads
        self.headers = headers
        names = experiment.variants.map(\.name)
        testArms = names.map { ExperimentArm(variant: $0, rollout: false) }
        rolloutArms = names.map { ExperimentArm(variant: $0, rollout: true) }
        let job = try HeaderRenderer(push: job.push, topic: job.apns.topic, campaign: campaign).shared
        ownHeaders = headers.map { h in
            let v = h.shared
            return v.priority != job.priority || v.collapseId != job.collapseId || v.expiration != job.expiration
        }
    }


    /// Fields every variant needs whatever the row's locale: a CSV header without one would make
    /// every row invalid whichever arm it falls in.
    var fieldsEveryRowNeeds: [(column: String, usedBy: String)] {
        var common = payloads[0].fieldsEveryRowNeeds
        for p in payloads.dropFirst() {
            let other = Set(p.fieldsEveryRowNeeds.map(\.column))
            common = common.filter { other.contains($0.column) }
        }
        return common
    }
}
