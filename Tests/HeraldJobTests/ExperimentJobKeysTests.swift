import Foundation
import HeraldCore
import HeraldJob
import HeraldTestSupport
import Testing

/// The `experiment` section: keys, defaults, `--winner`, and a message naming the key and its
/// line for each mistake.
@Suite struct ExperimentJobKeysTests {
    let dir = TemporaryDirectory("job-experiment")

    func load(_ experiment: String, push: String = "{ type: alert }", winner: String? = nil) throws -> JobSpec {
        try dir.write("a.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        try dir.write("b.json", #"{"aps": {"alert": "from a file"}}"#)
        let path = try dir.write("jobs/job.yaml", """
            campaign: c
            audience: { files: [../a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push: \(push)
            experiment:
            \(experiment)
            """)
        return try JobLoader.load(path: path, overrides: JobOverrides(winner: winner))
    }

    static let twoVariants = """
          variants:
            - { name: a, template: { aps: { alert: "A" } }, locales: { fr: { aps: { alert: "A fr" } } } }
            - { name: b, weight: 3, template_file: ../b.json }
        """

    @Test func keysAndDefaults() throws {
        let spec = try load("  test_share: 20%\n  holdout: 2.5%\n  winner: b\n  seed: again\n" + Self.twoVariants)
        let e = try #require(spec.experiment)
        #expect(e.testShare == 0.20 && e.holdout == 0.025 && e.winner == "b" && e.seed == "again")
        #expect(e.variants.map(\.name) == ["a", "b"] && e.variants.map(\.weight) == [1, 3])
        #expect(e.variants[0].locales.map(\.locale) == ["fr"])
        #expect(e.variants[1].template == .object([.init("aps", .object([.init("alert", .string("from a file"))]))]))
        #expect(e.winnerIndex == 1)
        // The first variant stands in for push.template.
        #expect(spec.push.template == e.variants[0].template)

        let plain = try #require(try load(Self.twoVariants).experiment)
        #expect(plain.testShare == nil && plain.holdout == 0 && plain.winner == nil && plain.seed == "")
    }

    @Test func winnerFromTheCommandLineReplacesTheJobs() throws {
        #expect(try load("  winner: a\n" + Self.twoVariants, winner: "b").experiment?.winner == "b")
        let error = try #require(throws: JobError.self) { try load(Self.twoVariants, winner: "c") }
        #expect(error.description.contains("--winner names no variant: \"c\" (the variants are a, b)"), "\(error)")
    }

    @Test func winnerWithoutAnExperimentIsAnError() throws {
        let path = try dir.write("jobs/plain.yaml", """
            campaign: c
            audience: { files: [../a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template: { aps: { alert: "x" } } }
            """)
        try dir.write("a.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        let error = try #require(throws: JobError.self) { try JobLoader.load(path: path, overrides: JobOverrides(winner: "a")) }
        #expect(error.description.contains("--winner a: the job has no experiment section"), "\(error)")
    }

    @Test(arguments: [
        ("  test_share: 20\n" + twoVariants, "experiment.test_share must be a percentage from 0% to 100%, such as 20% or 2.5%, not \"20\""),
        ("  holdout: 0.05\n" + twoVariants, "experiment.holdout must be a percentage"),
        ("  test_share: 0%\n" + twoVariants, "experiment.test_share must be more than 0%"),
        ("  holdout: 100%\n" + twoVariants, "experiment.holdout must be less than 100%"),
        ("  test_share: 90%\n  holdout: 20%\n" + twoVariants, "experiment.test_share and experiment.holdout add up to more than 100% (110%)"),
        ("  test_share: 20%\n", "experiment.variants is required"),
        ("  variants: []\n", "experiment.variants must be a list of variants"),
        ("  winner: c\n" + twoVariants, "experiment.winner names no variant: \"c\" (the variants are a, b)"),
        ("  variants:\n    - { name: a, template: { aps: { alert: A } } }\n    - { name: a, template: { aps: { alert: B } } }\n",
         "experiment.variants[1].name \"a\" is given to two variants"),
        ("  variants:\n    - { name: holdout, template: { aps: { alert: A } } }\n", "cannot be \"holdout\""),
        ("  variants:\n    - { name: \"a b\", template: { aps: { alert: A } } }\n", "may contain only letters, digits"),
        ("  variants:\n    - { name: a }\n", "experiment.variants.a needs a template or a template_file"),
        ("  variants:\n    - { name: a, template_file: ../missing.json }\n", "experiment.variants.a.template_file not found or unreadable: ../missing.json"),
        ("  variants:\n    - { name: a, template: { aps: { alert: A } }, template_file: ../b.json }\n", "takes template or template_file, not both"),
        ("  variants:\n    - { name: a, weight: 0, template: { aps: { alert: A } } }\n", "experiment.variants[0].weight"),
        ("  variants:\n    - { name: a, template: { aps: { alert: A } }, title: x }\n", "unknown key \"experiment.variants[0].title\""),
        ("  holdut: 5%\n" + twoVariants, "unknown key \"experiment.holdut\": did you mean \"experiment.holdout\"?"),
    ])
    func mistakesAreNamedWithTheirLine(experiment: String, message: String) throws {
        let error = try #require(throws: JobError.self) { try load(experiment) }
        #expect(error.description.contains(message), "\(error)")
        #expect(error.description.contains("line "), "\(error)")
    }

    @Test func pushKeepsItsOtherKeysButNotItsTemplates() throws {
        let spec = try load(Self.twoVariants, push: "{ type: alert, priority: 5, collapse_id: none }")
        #expect(spec.push.priority == 5 && spec.push.collapseId == .none)
        for push in ["{ template: { aps: { alert: x } } }", "{ template_file: ../b.json }"] {
            let error = try #require(throws: JobError.self) { try load(Self.twoVariants, push: push) }
            #expect(error.description.contains("do not go with experiment"), "\(error)")
        }
        let error = try #require(throws: JobError.self) { try load(Self.twoVariants, push: "{ locales: { fr: { aps: { alert: x } } } }") }
        #expect(error.description.contains("push.locales does not go with experiment"), "\(error)")
    }

    @Test func aRecurringCampaignCannotWaitForAWinner() throws {
        let path = try dir.write("jobs/daily.yaml", """
            campaign: digest-{date}
            audience: { files: [../a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { type: alert }
            experiment:
              test_share: 20%
            \(Self.twoVariants)
            """)
        try dir.write("a.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        try dir.write("b.json", #"{"aps": {"alert": "from a file"}}"#)
        let error = try #require(throws: JobError.self) { try JobLoader.load(path: path) }
        #expect(error.description.contains("experiment.test_share needs experiment.winner in a recurring campaign"), "\(error)")
        #expect(try JobLoader.load(path: path, overrides: JobOverrides(winner: "a")).experiment?.winner == "a")
    }

    @Test func aBroadcastCannotHaveAnExperiment() throws {
        let error = try #require(throws: JobError.self) {
            try load(Self.twoVariants, push: "{ type: liveactivity, broadcast: { channels: [\"dGVzdA==\"] } }")
        }
        #expect(error.description.contains("experiment does not apply to a broadcast"), "\(error)")
    }
}
