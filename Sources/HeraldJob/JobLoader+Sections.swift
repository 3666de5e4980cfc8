import Foundation
import HeraldCore
import Yams

extension Context {
    static let audienceKeys = ["files", "format", "token_field", "locale_field", "id_field", "delimiter", "prescan", "max_invalid_rows",
                               "allow_empty", "registered_at_field", "timezone_field", "channel_field", "app_field",
                               "environment_field"]

    func parseAudience(_ m: inout YAMLMapping) throws(JobError) -> AudienceSpec {
        try m.rejectUnknown(known: Self.audienceKeys)
        guard let (filesNode, filesLine) = m.node("files") else { throw m.error("files", "is required") }
        var names: [(name: String, line: Int?)] = []
        switch filesNode {
        case .scalar(let s): names = [(s.string, filesLine)]
        case .sequence(let seq):
            for item in seq {
                guard case .scalar(let s) = item else { throw JobError(file: file, line: item.mark?.line, "audience.files entries must be file paths") }
                names.append((s.string, item.mark?.line ?? filesLine))
            }
        default: throw JobError(file: file, line: filesLine, "audience.files must be a path or a list of paths")
        }
        if names.isEmpty { throw JobError(file: file, line: filesLine, "audience.files lists no file") }
        var spec = AudienceSpec(files: try audienceFiles(names))
        spec.format = try m.choice("format", AudienceFormat.self) ?? .auto
        spec.tokenField = try m.string("token_field") ?? "token"
        spec.localeField = try m.string("locale_field")
        spec.idField = try m.string("id_field")
        if let d = try m.string("delimiter") {
            switch d {
            case ",": spec.delimiter = UInt8(ascii: ",")
            case ";": spec.delimiter = UInt8(ascii: ";")
            case "\t", "tab", "\\t": spec.delimiter = UInt8(ascii: "\t")
            default: throw m.error("delimiter", "must be \",\", \";\" or \"tab\", not \"\(d)\"")
            }
        }
        spec.registeredAtField = try m.string("registered_at_field")
        spec.prescan = try m.bool("prescan") ?? true
        spec.allowEmpty = try m.bool("allow_empty") ?? false
        if let limit = try m.string("max_invalid_rows") {
            guard let parsed = InvalidRowLimit(text: limit) else {
                throw m.error("max_invalid_rows", "must be a number of rows (1000) or a percentage of rows (5%), not \"\(limit)\"")
            }
            spec.maxInvalidRows = parsed
        }
        spec.timezoneField = try m.string("timezone_field")
        spec.channelField = try m.string("channel_field")
        spec.appField = try m.string("app_field")
        spec.environmentField = try m.string("environment_field")
        if spec.channelField != nil && m.has("token_field") {
            throw m.error("token_field", "and audience.channel_field are alternatives: a row names a device token or a broadcast channel")
        }
        try m.finish(known: Self.audienceKeys)
        return spec
    }

    static let apnsKeys = ["endpoint", "ca_file", "topic", "auth", "certificate", "connections", "streams_per_connection", "proxy", "simulator",
                           "connect_timeout", "request_timeout", "idle_timeout", "ping_interval", "ping_timeout", "libcurl_shims", "engine",
                           "channels_endpoint", "apps", "endpoints", "environment_fallback"]

    func parseAPNs(_ m: inout YAMLMapping, overrides: JobOverrides) throws(JobError) -> APNsSpec {
        let written = try m.string("endpoint")
        let endpointText = overrides.endpoint ?? written ?? "production"
        let endpoint: APNsEndpoint
        switch endpointText {
        case "production": endpoint = .production
        case "sandbox": endpoint = .sandbox
        case "simulator": endpoint = .simulator
        default:
            guard let url = URL(string: endpointText), url.scheme == "https", url.host != nil, url.path.isEmpty || url.path == "/" else {
                throw m.error("endpoint", "must be production, sandbox, simulator or an https://host:port URL, not \"\(endpointText)\"")
            }
            endpoint = .custom(endpointText.hasSuffix("/") ? String(endpointText.dropLast()) : endpointText)
        }
        var caFile = try m.string("ca_file").map(resolve)
        if let o = overrides.caFile { caFile = URL(fileURLWithPath: o).standardizedFileURL.path }
        if let ca = caFile, !FileManager.default.isReadableFile(atPath: ca) {
            throw m.error("ca_file", "names a file that does not exist or cannot be read: \(ca)")
        }
        let apps = try parseApps(&m, endpoint: endpoint)
        let topic: String
        var auth: TokenAuthSpec?
        var certificate: CertificateAuthSpec?
        if let first = apps.first {
            for key in ["topic", "auth", "certificate"] where m.has(key) {
                throw m.error(key, "and apns.apps are alternatives: with apps, each app has its own topic and credentials")
            }
            topic = first.topic
        } else {
            topic = try m.requiredString("topic")
            (auth, certificate) = try parseCredentials(&m, endpoint: endpoint)
        }
        let proxy = try parseProxy(&m)
        var rules = SimulatorRules()
        if var sm = try m.mapping("simulator") {
            guard endpoint == .simulator else { throw m.error("simulator", "applies only with endpoint: simulator") }
            rules.logPath = try sm.string("log").map(resolve)
            try parseSimulatorRules(&sm, into: &rules)
        }
        let connections = try m.int("connections", range: 1...64) ?? APNsSpec.defaultConnections
        let streams = try m.int("streams_per_connection", range: 1...1000) ?? APNsSpec.defaultStreamsPerConnection
        var timeouts: [String: Int] = [:]
        for key in ["connect_timeout", "request_timeout", "idle_timeout", "ping_interval", "ping_timeout"] {
            guard let v = try m.duration(key) else { continue }
            if v < 1 { throw m.error(key, "must be at least 1s") }
            timeouts[key] = v
        }
        var channelsEndpoint = try m.string("channels_endpoint")
        if let o = overrides.channelsEndpoint { channelsEndpoint = o }
        if let text = channelsEndpoint {
            guard let url = URL(string: text), url.scheme == "https", url.host != nil, url.path.isEmpty || url.path == "/" else {
                throw m.error("channels_endpoint", "must be an https://host:port URL (where `herald sim --management-port` listens), not \"\(text)\"")
            }
            channelsEndpoint = text.hasSuffix("/") ? String(text.dropLast()) : text
        }
        let endpoints = try parseEndpoints(&m, endpoint: endpoint)
        let fallback = try m.bool("environment_fallback") ?? false
        try m.finish(known: Self.apnsKeys)
        var spec = APNsSpec(endpoint: endpoint, caFile: caFile, topic: topic, auth: auth, connections: connections, streamsPerConnection: streams)
        spec.simulator = rules
        spec.connectTimeout = timeouts["connect_timeout"] ?? spec.connectTimeout
        spec.requestTimeout = timeouts["request_timeout"] ?? spec.requestTimeout
        spec.idleTimeout = timeouts["idle_timeout"] ?? spec.idleTimeout
        spec.pingInterval = timeouts["ping_interval"] ?? spec.pingInterval
        spec.pingTimeout = timeouts["ping_timeout"] ?? spec.pingTimeout
        spec.certificate = certificate
        spec.proxy = proxy
        spec.channelsEndpoint = channelsEndpoint
        spec.apps = apps
        spec.endpoints = endpoints
        spec.environmentFallback = fallback
        return spec
    }

    /// `apns.engine` and `apns.libcurl_shims` chose between libcurl's multi interface and herald's
    /// own connection on nghttp2; only the latter remains. Job keys are never removed without
    /// notice: `engine: nghttp2` is what every job now gets, so it loads silently; `engine: libcurl`
    /// and `libcurl_shims` load with a warning that names what replaced them. A value neither engine
    /// ever had is still an error.
    func obsoleteEngineKeys(_ m: inout YAMLMapping) throws(JobError) -> [String] {
        enum Engine: String, CaseIterable { case libcurl, nghttp2 }
        enum Shims: String, CaseIterable { case on, off }
        var out: [String] = []
        let replacement = "every push goes through herald's own HTTP/2 connection on nghttp2 (docs/delivery.md); the key is ignored"
        if try m.choice("engine", Engine.self) == .libcurl {
            out.append(m.error("engine", "libcurl is no longer available: \(replacement)").description)
        }
        if try m.choice("libcurl_shims", Shims.self) != nil {
            out.append(m.error("libcurl_shims", "no longer does anything (the libcurl engine was removed): \(replacement)").description)
        }
        return out
    }

    /// `experiment`: the job has an experiment section, whose variants carry the templates.
    func parsePush(_ m: inout YAMLMapping, experiment: Bool = false, apps: [AppSpec] = []) throws(JobError) -> PushSpec {
        let type = try m.choice("type", PushType.self) ?? .alert
        var priority = type.defaultPriority
        var priorityTemplate: String?
        if let (n, _) = m.node("priority") {
            guard case .scalar(let s) = n else { throw m.error("priority", "must be 10, 5, 1 or a {{field}} placeholder") }
            if s.string.contains("{{") {
                // Apple: background is "always 5", so there is nothing to choose per recipient.
                if type == .background { throw m.error("priority", "must be 5 for background pushes, not a placeholder") }
                priorityTemplate = s.string
            } else {
                guard let p = Int(s.string) else { throw m.error("priority", "must be 10, 5, 1 or a {{field}} placeholder, not \"\(s.string)\"") }
                if let problem = type.priorityProblem(p) { throw m.error("priority", problem) }
                priority = p
            }
        }
        let template: JSONValue
        let locales: [(locale: String, template: JSONValue)]
        let lines: TemplateLines
        if experiment {
            if m.has("template") && m.has("template_file") { throw JobError(file: file, line: m.line, "push takes template or template_file, not both") }
            if m.has("template") || m.has("template_file") {
                throw JobError(file: file, line: m.line, "push.template and push.template_file do not go with experiment: each of experiment.variants has its own")
            }
            if let (_, l) = m.node("locales") {
                throw JobError(file: file, line: l, "push.locales does not go with experiment: each of experiment.variants has its own locales")
            }
            (template, locales, lines) = (.object([]), [], TemplateLines())
        } else {
            let parsed = try parseTemplates(&m, section: "push")
            guard let t = parsed.template else { throw JobError(file: file, line: m.line, "push.template or push.template_file is required") }
            (template, locales, lines) = (t, parsed.locales, parsed.lines)
        }
        let missing = try m.choice("missing_field", MissingFieldPolicy.self) ?? .error
        let oversize = try m.choice("oversize", OversizePolicy.self) ?? .error
        var collapse = CollapseIdPolicy.auto
        if let c = try m.string("collapse_id") {
            switch c {
            case "auto": collapse = .auto
            case "none": collapse = .none
            default:
                // With placeholders the rendered id is checked per recipient (HeraldPayload.HeaderRenderer).
                guard c.contains("{{") || c.utf8.count <= 64 else { throw m.error("collapse_id", "must be at most 64 bytes (Apple: BadCollapseId)") }
                collapse = .fixed(c)
            }
        }
        var expiration = ExpirationSpec.unset
        var expirationTemplate: String?
        if let e = try m.string("expiration") {
            if e.contains("{{") { expirationTemplate = e }
            else if let parsed = ExpirationText.parse(e) { expiration = parsed }
            else { throw m.error("expiration", "must be \(ExpirationText.expected) or a {{field}} placeholder, not \"\(e)\"") }
        }
        var broadcast: BroadcastSpec?
        if let (n, l) = m.node("broadcast") {
            if n.null != nil { broadcast = BroadcastSpec() } else {
                guard case .mapping = n else { throw JobError(file: file, line: l, "push.broadcast must be a mapping such as { channels: [...] } or {}") }
                var b = try YAMLMapping(n, path: "push.broadcast", file: file)
                broadcast = try parseBroadcast(&b, apps: apps)
            }
        }
        try m.finish(known: ["type", "priority", "template", "template_file", "locales", "missing_field", "oversize", "collapse_id", "expiration",
                             "broadcast"])
        var push = PushSpec(type: type, priority: priority, template: template, locales: locales, missingField: missing,
                            oversize: oversize, collapseId: collapse, expiration: expiration)
        push.broadcast = broadcast
        push.templateLines = lines
        push.priorityTemplate = priorityTemplate
        push.expirationTemplate = expirationTemplate
        return push
    }

    func parseThrottle(_ m: inout YAMLMapping) throws(JobError) -> ThrottleSpec {
        var t = ThrottleSpec()
        t.rate = try m.double("rate", min: 0) ?? t.rate
        t.silentRate = try m.double("silent_rate", min: 0) ?? t.silentRate
        t.silentPerDevicePerHour = try m.int("silent_per_device_per_hour", range: 0...100) ?? t.silentPerDevicePerHour
        t.silentOverBudget = try m.choice("silent_over_budget", SilentOverBudget.self) ?? t.silentOverBudget
        t.deadline = try parseDeadline(&m)
        if var c = try m.mapping("frequency_cap") { t.frequencyCap = try parseFrequencyCap(&c) }
        try m.finish(known: ["rate", "silent_rate", "silent_per_device_per_hour", "silent_over_budget", "deadline", "frequency_cap"])
        return t
    }

    /// `throttle.frequency_cap: { category, limits: [{ max, per }], over_cap }`.
    func parseFrequencyCap(_ m: inout YAMLMapping) throws(JobError) -> FrequencyCap {
        let category = try m.requiredString("category")
        guard category.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == "." }) else {
            throw m.error("category", "may contain only letters, digits, '.', '_' and '-', not \"\(category)\"")
        }
        guard let (node, line) = m.node("limits") else { throw m.error("limits", "is required: a list such as [{ max: 3, per: 24h }]") }
        guard case .sequence(let items) = node, !items.isEmpty else {
            throw JobError(file: file, line: line, "throttle.frequency_cap.limits must be a list such as [{ max: 3, per: 24h }]")
        }
        var limits: [FrequencyCap.Limit] = []
        for (i, item) in items.enumerated() {
            var l = try YAMLMapping(item, path: "throttle.frequency_cap.limits[\(i)]", file: file)
            guard let max = try l.int("max", range: 1...10_000) else { throw l.error("max", "is required") }
            guard let per = try l.duration("per") else { throw l.error("per", "is required: a duration such as 24h or 7d") }
            guard (60...(366 * 86_400)).contains(per) else { throw l.error("per", "must be from 1m to 366d, not \(per)s") }
            try l.finish(known: ["max", "per"])
            limits.append(.init(max: max, per: per))
        }
        let over = try m.choice("over_cap", FrequencyCap.OverCap.self) ?? .skip
        try m.finish(known: ["category", "limits", "over_cap"])
        return FrequencyCap(category: category, limits: limits, overCap: over)
    }

    /// `throttle.deadline`: `2h` (after the run starts), `"2026-12-01T06:00:00Z"` or a UNIX time,
    /// or `{ at: …, after: … }` for both (the earlier wins). Times use push.expiration's grammar.
    func parseDeadline(_ m: inout YAMLMapping) throws(JobError) -> ThrottleDeadline? {
        guard let (node, line) = m.node("deadline") else { return nil }
        let expected = "must be a duration from the start of the run (90m, 2h), a UNIX time, a UTC time like 2026-12-01T06:00:00Z, or { at: time, after: duration }"
        func bound(_ text: String, _ key: String, line: Int?) throws(JobError) -> ThrottleDeadline {
            switch ExpirationText.parse(text) {
            case .relative(let s) where s > 0: return ThrottleDeadline(after: s)
            case .absolute(let t): return ThrottleDeadline(at: t)
            default: throw JobError(file: file, line: line, "\(key) \(expected), not \"\(text)\"")
            }
        }
        switch node {
        case .scalar(let s):
            if node.null != nil && s.style == .plain { return nil }
            return try bound(s.string, m.qualified("deadline"), line: line)
        case .mapping:
            var d = try YAMLMapping(node, path: m.qualified("deadline"), file: file)
            var out = ThrottleDeadline()
            if let (n, l) = d.node("at") {
                guard case .scalar(let s) = n, let at = try bound(s.string, d.qualified("at"), line: l).at else {
                    throw JobError(file: file, line: l, "\(d.qualified("at")) must be a UNIX time or a UTC time like 2026-12-01T06:00:00Z")
                }
                out.at = at
            }
            if let (n, l) = d.node("after") {
                guard case .scalar(let s) = n, let after = try? bound(s.string, d.qualified("after"), line: l).after else {
                    throw JobError(file: file, line: l, "\(d.qualified("after")) must be a duration such as 90m or 2h")
                }
                out.after = after
            }
            try d.finish(known: ["at", "after"])
            guard out.at != nil || out.after != nil else { throw JobError(file: file, line: line, "\(m.qualified("deadline")) needs at or after") }
            return out
        default:
            throw JobError(file: file, line: line, "\(m.qualified("deadline")) \(expected)")
        }
    }

    /// A section's payload templates: `template` or `template_file` (nil: neither), and `locales`,
    /// each value's line recorded under `<section>.template` and `<section>.locales.<locale>`.
    /// `section`: `push`, or an experiment's variant (`experiment.variants.b`).
    func parseTemplates(_ m: inout YAMLMapping, section: String) throws(JobError)
        -> (template: JSONValue?, locales: [(locale: String, template: JSONValue)], lines: TemplateLines) {
        var lines = TemplateLines()
        var template: JSONValue?
        switch (m.has("template"), m.has("template_file")) {
        case (true, true): throw JobError(file: file, line: m.line, "\(section) takes template or template_file, not both")
        case (false, false): break
        case (true, false):
            let (n, _) = m.node("template")!
            template = try jsonValue(n, path: "\(section).template")
            Self.recordLines(n, source: "\(section).template", path: "", file: file, into: &lines)
        case (false, true):
            let name = try m.requiredString("template_file")
            let (value, node) = try loadTemplateFile(name, line: m.line, key: "\(section).template_file")
            template = value
            Self.recordLines(node, source: "\(section).template", path: "", file: name, into: &lines)
        }
        var locales: [(locale: String, template: JSONValue)] = []
        if let (n, l) = m.node("locales") {
            guard case .mapping(let lm) = n else { throw JobError(file: file, line: l, "\(section).locales must map a locale to a template") }
            for (k, v) in lm {
                guard case .scalar(let ks) = k else { throw JobError(file: file, line: k.mark?.line, "\(section).locales keys must be locale codes") }
                locales.append((ks.string, try jsonValue(v, path: "\(section).locales.\(ks.string)")))
                Self.recordLines(v, source: "\(section).locales.\(ks.string)", path: "", file: file, into: &lines)
            }
        }
        return (template, locales, lines)
    }

    /// The line of every value of a template node, by the JSON path the payload compiler names
    /// it with (`aps.alert.loc-args[1]`).
    static func recordLines(_ node: Node, source: String, path: String, file: String, into lines: inout TemplateLines) {
        if let line = node.mark?.line { lines.record(source: source, path: path, file: file, line: line) }
        switch node {
        case .mapping(let map):
            for (k, v) in map {
                guard case .scalar(let ks) = k else { continue }
                let child = path.isEmpty ? ks.string : "\(path).\(ks.string)"
                recordLines(v, source: source, path: child, file: file, into: &lines)
                // The key's line, not its block value's (which starts on the next line).
                if let line = k.mark?.line { lines.record(source: source, path: child, file: file, line: line) }
            }
        case .sequence(let seq):
            for (i, item) in seq.enumerated() { recordLines(item, source: source, path: "\(path)[\(i)]", file: file, into: &lines) }
        default: break
        }
    }

    /// A template file is JSON (or YAML, of which JSON is a subset); parsed with Yams so key order is kept.
    func loadTemplateFile(_ name: String, line: Int?, key: String = "push.template_file") throws(JobError) -> (JSONValue, Node) {
        let path = resolve(name)
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw JobError(file: file, line: line, "\(key) not found or unreadable: \(name) (looked for \(path))")
        }
        do {
            guard let node = try Yams.compose(yaml: text) else { throw JobError(file: name, line: nil, "template file is empty") }
            return (try Context(file: name, baseDir: baseDir).jsonValue(node, path: "template"), node)
        } catch let e as JobError {
            throw e
        } catch {
            throw JobError(file: name, line: JobLoader.line(of: error), "template is not valid JSON: \(JobLoader.summary(of: error))")
        }
    }

    /// YAML node → ordered JSON. Quoted scalars stay strings; plain ones resolve by YAML's tags.
    func jsonValue(_ node: Node, path: String) throws(JobError) -> JSONValue {
        switch node {
        case .scalar(let s):
            if s.style != .plain { return .string(s.string) }
            // Plain scalars resolve by YAML's core schema: null, booleans, integers, floats, else text.
            if node.null != nil { return .null }
            if let b = node.bool { return .bool(b) }
            if let i = node.int { return .number(String(i)) }
            if let d = node.float {
                guard d.isFinite else { throw JobError(file: file, line: s.mark?.line, "\(path): \(s.string) is not a JSON number") }
                return .number(s.string.allSatisfy({ "0123456789.-+eE".contains($0) }) ? s.string : String(d))
            }
            return .string(s.string)
        case .sequence(let seq):
            var items: [JSONValue] = []
            for (i, item) in seq.enumerated() { items.append(try jsonValue(item, path: "\(path)[\(i)]")) }
            return .array(items)
        case .mapping(let map):
            var members: [JSONValue.Member] = []
            for (k, v) in map {
                guard case .scalar(let ks) = k else { throw JobError(file: file, line: k.mark?.line, "\(path): keys must be text") }
                members.append(JSONValue.Member(ks.string, try jsonValue(v, path: "\(path).\(ks.string)")))
            }
            return .object(members)
        case .alias:
            throw JobError(file: file, line: node.mark?.line, "\(path): YAML aliases are not supported in templates")
        }
    }
}
