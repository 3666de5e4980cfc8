/// Job section `experiment`: an A/B test of several payloads on part of the audience, a holdout
/// group that gets nothing, and the winner rolled out to the rest (docs/experiments.md).
public struct ExperimentSpec: Sendable {
    /// One variant: its own payload template and locales, replacing `push.template` and
    /// `push.locales` for the recipients assigned to it; every other `push` key is the job's.
    public struct Variant: Sendable {
        public var name: String
        /// Relative weight within the test (a positive integer).
        public var weight: Int
        public var template: JSONValue
        public var locales: [(locale: String, template: JSONValue)]
        /// Where the job wrote this variant's template values, for messages.
        public var templateLines = TemplateLines()
        /// The line of the variant's entry in the job file.
        public var line: Int?
        public init(name: String, weight: Int = 1, template: JSONValue, locales: [(locale: String, template: JSONValue)] = [], line: Int? = nil) {
            self.name = name; self.weight = weight; self.template = template; self.locales = locales; self.line = line
        }
    }

    /// `experiment.test_share`: the share of the audience in the test (0...1); nil: everyone not
    /// held out gets a variant, and there is no rollout.
    public var testShare: Double?
    /// `experiment.holdout`: the share of the audience that gets nothing (0...1).
    public var holdout: Double
    public var variants: [Variant]
    /// `experiment.winner` (or `herald run --winner`): the variant sent to every recipient in
    /// neither the test nor the holdout.
    public var winner: String?
    /// `experiment.seed`: mixed into the assignment, so two experiments of one campaign name can
    /// split the audience differently.
    public var seed: String
    public init(testShare: Double? = nil, holdout: Double = 0, variants: [Variant], winner: String? = nil, seed: String = "") {
        self.testShare = testShare; self.holdout = holdout; self.variants = variants; self.winner = winner; self.seed = seed
    }

    /// The value of the `variant` column and event field for a held-out recipient; no variant may take it.
    public static let holdoutName = "holdout"

    /// A share (0...1) as the job writes it: `20%`, `2.5%`.
    public static func percentText(_ share: Double) -> String { String(format: "%g%%", share * 100) }

    /// The index of `winner` in `variants`; nil when no winner is chosen (or it names none).
    public var winnerIndex: Int? { winner.flatMap { w in variants.firstIndex { $0.name == w } } }

    /// The job's push section with one variant's template and locales in place of its own.
    public func push(_ variant: Int, of push: PushSpec) -> PushSpec {
        var p = push
        p.template = variants[variant].template
        p.locales = variants[variant].locales
        p.templateLines = variants[variant].templateLines
        return p
    }
}

extension JobSpec {
    /// Where `push.template` comes from, for messages: `push`, or, with an experiment, its first
    /// variant's section (which stands in for `push.template`).
    public var templateSection: String { experiment.map { "experiment.variants.\($0.variants[0].name)" } ?? "push" }
}
