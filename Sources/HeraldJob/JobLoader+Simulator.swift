import HeraldCore
import Yams

extension Context {
    /// `apns.simulator`: the in-process simulator's token rules and faults, key for key the
    /// flags of `herald sim` (ranges checked here so an error names the file and line).
    func parseSimulatorRules(_ sm: inout YAMLMapping, into rules: inout SimulatorRules) throws(JobError) {
        rules.unregisteredPrefixes = try sm.hexPrefixes("unregistered_prefixes")
        rules.badTokenPrefixes = try sm.hexPrefixes("bad_token_prefixes")
        rules.expiredTokenPrefixes = try sm.hexPrefixes("expired_token_prefixes")
        rules.notForTopicPrefixes = try sm.hexPrefixes("not_for_topic_prefixes")
        if let (node, line) = sm.node("flaky") {
            guard case .sequence(let items) = node else {
                throw JobError(file: file, line: line, "apns.simulator.flaky must be a list of { prefix, count, status }")
            }
            for (i, item) in items.enumerated() {
                var f = try YAMLMapping(item, path: "apns.simulator.flaky[\(i)]", file: file)
                let prefixes = try f.hexPrefixes("prefix")
                guard prefixes.count == 1 else { throw f.error("prefix", "must be one hex prefix") }
                let count = try f.int("count", range: 1...1_000_000) ?? 2
                let status = try f.int("status", range: 0...999) ?? 503
                guard [429, 500, 503].contains(status) else { throw f.error("status", "must be 429, 500 or 503, not \(status)") }
                try f.finish(known: ["prefix", "count", "status"])
                rules.flaky.append(SimulatorRules.Flaky(prefix: prefixes[0], count: count, status: status))
            }
        }
        if let (node, line) = sm.node("answers") {
            guard case .sequence(let items) = node else {
                throw JobError(file: file, line: line, "apns.simulator.answers must be a list of { prefix, reason }")
            }
            for (i, item) in items.enumerated() {
                var a = try YAMLMapping(item, path: "apns.simulator.answers[\(i)]", file: file)
                let prefixes = try a.hexPrefixes("prefix")
                guard prefixes.count == 1 else { throw a.error("prefix", "must be one hex prefix") }
                guard let reason = try a.string("reason") else { throw a.error("reason", "is required (a reason of Apple's table, e.g. BadTopic)") }
                guard APNsReason(reason).isKnown else { throw a.error("reason", "\"\(reason)\" is not a reason in Apple's table") }
                try a.finish(known: ["prefix", "reason"])
                rules.answers.append(SimulatorRules.Answer(prefix: prefixes[0], reason: reason))
            }
        }
        for (key, path) in [("p429", \SimulatorRules.p429), ("p500", \SimulatorRules.p500), ("p503", \SimulatorRules.p503)] {
            if let p = try sm.double(key, min: 0) {
                guard p <= 1 else { throw sm.error(key, "must be a probability from 0 to 1, not \(p)") }
                rules[keyPath: path] = p
            }
        }
        if rules.p429 + rules.p500 + rules.p503 > 1 {
            throw JobError(file: file, line: sm.line, "apns.simulator: p429 + p500 + p503 must not exceed 1")
        }
        rules.seed = UInt64(try sm.int("seed", range: 0...Int.max) ?? 0)
        rules.latencyMs = try sm.int("latency_ms", range: 0...600_000) ?? 0
        rules.latencyJitterMs = try sm.int("latency_jitter_ms", range: 0...600_000) ?? 0
        rules.goawayAfter = try sm.int("goaway_after", range: 1...Int(Int32.max))
        rules.closeAfter = try sm.int("close_after", range: 1...Int(Int32.max))
        if let mode = try sm.string("close_mode") {
            guard mode == "before" || mode == "after" else { throw sm.error("close_mode", "must be before or after, not \"\(mode)\"") }
            rules.closeBeforeProcessing = mode == "before"
        }
        rules.maxConcurrentStreams = try sm.int("max_concurrent_streams", range: 1...Int(Int32.max))
        rules.jwtMaxAge = try sm.duration("jwt_max_age")
        rules.tokenUpdateInterval = try sm.duration("token_update_interval")
        try sm.finish(known: ["unregistered_prefixes", "bad_token_prefixes", "expired_token_prefixes", "not_for_topic_prefixes",
                              "flaky", "answers", "p429", "p500", "p503", "seed", "latency_ms", "latency_jitter_ms", "goaway_after",
                              "close_after", "close_mode", "max_concurrent_streams", "jwt_max_age", "token_update_interval", "log"])
    }
}
