import Foundation

extension TestJob {
    /// Writes the job (and its audience rows, when it has some) into `dir` and returns the file.
    public func write(in dir: TemporaryDirectory) throws -> JobFile {
        if let rows {
            let text = rows.joined(separator: "\n") + "\n"
            if gzip { try dir.writeGzip("data/\(audienceFile)", text) } else { try dir.write("data/\(audienceFile)", text) }
        }
        return JobFile(path: try dir.write("jobs/\(name).yaml", yaml), job: self, dir: dir)
    }

    /// The job file's text. Only the keys set are written, each section in one place, so a test
    /// that looks for a key's line finds it with `JobFile.line(of:)`.
    public var yaml: String {
        var lines = ["campaign: \(Self.scalar(campaign))"]
        let a = audience
        let audienceKeys = Self.pairs([
            ("files", a.files.isEmpty ? nil : "[" + a.files.map(Self.quoted).joined(separator: ", ") + "]"),
            ("format", a.format), ("token_field", a.tokenField), ("channel_field", a.channelField),
            ("locale_field", a.localeField), ("id_field", a.idField), ("timezone_field", a.timezoneField),
            ("registered_at_field", a.registeredAtField), ("max_invalid_rows", a.maxInvalidRows),
            ("app_field", a.appField), ("environment_field", a.environmentField),
            ("prescan", a.prescan.map(String.init)), ("allow_empty", a.allowEmpty.map(String.init)),
        ])
        if !audienceKeys.isEmpty { lines.append("audience: { \(audienceKeys) }") }

        lines.append("apns:")
        let n = apns
        for (key, value) in [
            ("endpoint", Self.scalar(n.endpoint)), ("channels_endpoint", n.channelsEndpoint), ("ca_file", n.caFile),
            ("topic", n.apps == nil ? Self.scalar(n.topic) : nil), ("endpoints", n.endpoints),
            ("environment_fallback", n.environmentFallback.map(String.init)), ("connections", n.connections.map(String.init)),
            ("streams_per_connection", n.streamsPerConnection.map(String.init)), ("request_timeout", n.requestTimeout),
            ("ping_interval", n.pingInterval), ("ping_timeout", n.pingTimeout), ("engine", n.engine),
            ("auth", n.keyFile.map { "{ team_id: \(TestKey.teamId), key_id: \(TestKey.keyId), key_file: \(Self.quoted($0)) }" }),
            ("certificate", n.certificate), ("proxy", n.proxy),
            ("simulator", n.endpoint == "simulator" ? "{ \(simulatorKeys) }" : nil),
        ] as [(String, String?)] {
            if let value { lines.append("  \(key): \(value)") }
        }
        if let apps = n.apps { lines += ["  apps:"] + apps.map { "    - \($0)" } }
        if let extra = n.extra { lines.append(extra) }

        lines.append("push:")
        let p = push
        for (key, value) in [("type", p.type), ("priority", p.priority.map(Self.scalar)), ("expiration", p.expiration.map(Self.scalar)),
                             ("collapse_id", p.collapseId.map(Self.scalar))] {
            if let value { lines.append("  \(key): \(value)") }
        }
        if let channels = p.channels {
            lines += ["  broadcast:", "    channels:"] + channels.map { "      - \($0)" }
        }
        lines += Self.yamlValue("template", p.template) + Self.yamlValue("locales", p.locales)
        if let file = p.templateFile { lines.append("  template_file: \(file)") }
        if let extra = p.extra { lines.append(extra) }

        let t = throttle
        let throttleKeys = Self.pairs([
            ("rate", t.rate.map(String.init)), ("deadline", t.deadline), ("silent_over_budget", t.silentOverBudget),
            ("silent_per_device_per_hour", t.silentPerDevicePerHour.map(String.init)), ("silent_rate", t.silentRate.map(String.init)),
            ("frequency_cap", t.frequencyCap),
        ])
        if !throttleKeys.isEmpty { lines.append("throttle: { \(throttleKeys) }") }
        if let schedule { lines.append("schedule: \(schedule)") }
        let retryKeys = Self.pairs([("max_attempts", retry.maxAttempts.map(String.init)), ("max_elapsed", retry.maxElapsed)])
        if !retryKeys.isEmpty { lines.append("retry: { \(retryKeys) }") }
        if let compress = reports.compress {
            lines.append("reports: { \(Self.pairs([("dir", reports.dir), ("compress", String(compress))])) }")
        } else if let dir = reports.dir {
            lines.append("reports: \(dir)")
        }
        if let mode = state.networkFilesystem {
            lines.append("state: { \(Self.pairs([("file", state.file), ("network_filesystem", mode)])) }")
        } else if let file = state.file {
            lines.append("state: \(file)")
        }
        if let events { lines.append("events: \(events)") }
        let opsKeys = Self.pairs([("ping_url", ops.pingURL.map(Self.quoted)), ("ping_timeout", ops.pingTimeout),
                                  ("pushgateway", ops.pushgateway.map(Self.quoted))])
        if !opsKeys.isEmpty { lines.append("ops: { \(opsKeys) }") }
        if let extra { lines.append(extra) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `apns.simulator`'s keys; its request log always, so the test can read what was sent.
    var simulatorKeys: String {
        let s = apns.simulator
        func list(_ prefixes: [String]) -> String? { prefixes.isEmpty ? nil : "[" + prefixes.map(Self.quoted).joined(separator: ", ") + "]" }
        return Self.pairs([
            ("log", s.log ?? "../out/\(name).ndjson"),
            ("unregistered_prefixes", list(s.unregisteredPrefixes)), ("expired_token_prefixes", list(s.expiredTokenPrefixes)),
            ("bad_token_prefixes", list(s.badTokenPrefixes)), ("not_for_topic_prefixes", list(s.notForTopicPrefixes)),
            ("flaky", s.flaky.isEmpty ? nil : "[" + s.flaky.map { "{ prefix: \(Self.quoted($0.prefix)), count: \($0.count), status: \($0.status) }" }
                .joined(separator: ", ") + "]"),
            ("answers", s.answers.isEmpty ? nil : "[" + s.answers.map { "{ prefix: \(Self.quoted($0.prefix)), reason: \($0.reason) }" }
                .joined(separator: ", ") + "]"),
            ("latency_ms", s.latencyMs.map(String.init)), ("latency_jitter_ms", s.latencyJitterMs.map(String.init)),
            ("max_concurrent_streams", s.maxConcurrentStreams.map(String.init)), ("goaway_after", s.goawayAfter.map(String.init)),
            ("close_after", s.closeAfter.map(String.init)), ("p503", s.p503.map { String($0) }), ("p429", s.p429.map { String($0) }),
            ("seed", s.seed.map(String.init)), ("jwt_max_age", s.jwtMaxAge),
        ])
    }

    /// `key: value, …` of the pairs that have a value.
    static func pairs(_ pairs: [(String, String?)]) -> String {
        pairs.compactMap { key, value in value.map { "\(key): \($0)" } }.joined(separator: ", ")
    }

    /// A YAML value under `push:`: a flow value on the key's line, block lines indented below it.
    static func yamlValue(_ key: String, _ value: String?) -> [String] {
        guard let value else { return [] }
        guard value.contains("\n") else { return ["  \(key): \(value)"] }
        return ["  \(key):"] + value.split(separator: "\n").map { "    \($0)" }
    }

    /// A double-quoted YAML string (JSON's escapes are YAML's).
    static func quoted(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "\""
    }

    /// `s` as it is when YAML reads it as that string, quoted otherwise (`{date}`, `{{prio|5}}`, `a: b`).
    static func scalar(_ s: String) -> String {
        let plain = !s.isEmpty && s.first.map { !"{[&*!|>'\"%@#`-?:, ".contains($0) } == true
            && !s.contains(": ") && !s.contains(" #") && !s.hasSuffix(":") && !s.contains("{")
        return plain ? s : quoted(s)
    }
}
