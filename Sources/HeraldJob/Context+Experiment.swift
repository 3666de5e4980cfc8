import Foundation
import HeraldCore
import Yams

extension Context {
    static let experimentKeys = ["test_share", "holdout", "variants", "winner", "seed"]
    static let variantKeys = ["name", "weight", "template", "template_file", "locales"]

    /// Job section `experiment` (docs/experiments.md). `winnerOverride`: `herald run --winner`.
    func parseExperiment(_ m: inout YAMLMapping, campaign: String, winnerOverride: String?) throws(JobError) -> ExperimentSpec {
        try m.rejectUnknown(known: Self.experimentKeys)
        let holdout = try share(&m, "holdout") ?? 0
        let testShare = try share(&m, "test_share")
        if let t = testShare, t == 0 { throw m.error("test_share", "must be more than 0% (leave it out to give every recipient a variant)") }
        if holdout >= 1 { throw m.error("holdout", "must be less than 100%: the holdout gets nothing") }
        if let t = testShare, holdout + t > 1 + 1e-12 {
            throw m.error("test_share", "and experiment.holdout add up to more than 100% (\(ExperimentSpec.percentText(holdout + t)))")
        }
        guard let (variantsNode, variantsLine) = m.node("variants") else { throw m.error("variants", "is required: at least one variant") }
        guard case .sequence(let items) = variantsNode, !items.isEmpty else {
            throw JobError(file: file, line: variantsLine, "experiment.variants must be a list of variants such as { name: a, template: {...} }")
        }
        var variants: [ExperimentSpec.Variant] = []
        for (i, item) in items.enumerated() {
            var v = try YAMLMapping(item, path: "experiment.variants[\(i)]", file: file)
            variants.append(try parseVariant(&v, taken: variants.map(\.name)))
        }
        var winner = try m.string("winner")
        if let override = winnerOverride { winner = override }
        if let w = winner, !variants.contains(where: { $0.name == w }) {
            let names = variants.map(\.name).joined(separator: ", ")
            let what = "names no variant: \"\(w)\" (the variants are \(names))"
            if winnerOverride != nil { throw JobError(file: file, line: variantsLine, "--winner \(what)") }
            throw m.error("winner", what)
        }
        // Each period of a recurring campaign is its own run, and the next one starts only when the
        // last has finished: a test left waiting for a winner would hold every later period back.
        if testShare != nil, winner == nil, CampaignName(campaign).isPeriodic {
            throw m.error("test_share", "needs experiment.winner in a recurring campaign (\(campaign)): each period's run must finish, "
                          + "and one waiting for a winner would hold the next period back. Leave test_share out to give every "
                          + "recipient a variant, or choose the winner")
        }
        let seed = try m.string("seed") ?? ""
        try m.finish(known: Self.experimentKeys)
        return ExperimentSpec(testShare: testShare, holdout: holdout, variants: variants, winner: winner, seed: seed)
    }

    private func parseVariant(_ v: inout YAMLMapping, taken: [String]) throws(JobError) -> ExperimentSpec.Variant {
        try v.rejectUnknown(known: Self.variantKeys)
        let name = try v.requiredString("name")
        guard name.utf8.count <= 32, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) else {
            throw v.error("name", "may contain only letters, digits, '.', '_' and '-' (at most 32), not \"\(name)\"")
        }
        if name == ExperimentSpec.holdoutName { throw v.error("name", "cannot be \"holdout\": reports name the holdout group so") }
        if taken.contains(name) { throw v.error("name", "\"\(name)\" is given to two variants") }
        let section = "experiment.variants.\(name)"
        let weight = try v.int("weight", range: 1...1_000_000) ?? 1
        let parsed = try parseTemplates(&v, section: section)
        guard let template = parsed.template else { throw JobError(file: file, line: v.line, "\(section) needs a template or a template_file") }
        try v.finish(known: Self.variantKeys)
        var variant = ExperimentSpec.Variant(name: name, weight: weight, template: template, locales: parsed.locales, line: v.line)
        variant.templateLines = parsed.lines
        return variant
    }

    /// A share written as a percentage (`20%`, `2.5%`), as a fraction.
    private func share(_ m: inout YAMLMapping, _ key: String) throws(JobError) -> Double? {
        guard let text = try m.string(key) else { return nil }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasSuffix("%"), let value = Double(trimmed.dropLast().trimmingCharacters(in: .whitespaces)),
              value.isFinite, value >= 0, value <= 100 else {
            throw m.error(key, "must be a percentage from 0% to 100%, such as 20% or 2.5%, not \"\(text)\"")
        }
        return value / 100
    }

}
