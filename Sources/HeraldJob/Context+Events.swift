import HeraldCore
import Yams

extension Context {
    /// The `events` section: a webhook (`url`), a file, or both, and how batches are made.
    func parseEvents(_ m: inout YAMLMapping) throws(JobError) -> EventsSpec {
        var spec = EventsSpec()
        if let url = try m.string("url") {
            guard OpsSpec.isHTTPURL(url) else {
                throw m.error("url", "must be an http:// or https:// URL with a host, such as https://api.example.com/herald/events")
            }
            spec.url = url
        }
        if let f = try m.string("file") {
            guard !f.isEmpty else { throw m.error("file", "must name a file, such as ../out/events.ndjson") }
            spec.file = resolve(f)
        }
        guard spec.url != nil || spec.file != nil else {
            throw JobError(file: file, line: m.line, "events needs url (a webhook), file (an NDJSON file) or both")
        }
        spec.batch = try m.int("batch", range: 1...10_000) ?? spec.batch
        if let s = try m.duration("flush") {
            guard (1...3600).contains(s) else { throw m.error("flush", "must be from 1s to 1h, not \(s)s") }
            spec.flush = s
        }
        if let s = try m.duration("timeout") {
            guard (1...300).contains(s) else { throw m.error("timeout", "must be from 1s to 5m, not \(s)s") }
            spec.timeout = s
        }
        if let (node, line) = m.node("headers_env") {
            guard case .mapping(let pairs) = node else {
                throw JobError(file: file, line: line, "events.headers_env must map header names to environment variable names, such as { Authorization: EVENTS_TOKEN }")
            }
            for (k, v) in pairs {
                guard case .scalar(let name) = k, Self.isHeaderName(name.string) else {
                    throw JobError(file: file, line: k.mark?.line ?? line, "events.headers_env: \"\(k.string ?? "")\" is not an HTTP header name (letters, digits and -)")
                }
                guard case .scalar(let variable) = v, Self.isVariableName(variable.string) else {
                    throw JobError(file: file, line: v.mark?.line ?? line,
                                   "events.headers_env.\(name.string) must name an environment variable (letters, digits and _), not a value: the secret stays in the environment")
                }
                if ["content-type", "content-length", "host", "transfer-encoding"].contains(name.string.lowercased()) {
                    throw JobError(file: file, line: k.mark?.line ?? line, "events.headers_env.\(name.string): herald sets this header itself")
                }
                spec.headersEnv.append(.init(name: name.string, variable: variable.string))
            }
            guard spec.url != nil else { throw JobError(file: file, line: line, "events.headers_env applies to events.url, which is not set") }
        }
        try m.finish(known: ["url", "file", "batch", "flush", "timeout", "headers_env"])
        return spec
    }

    /// An HTTP field name as RFC 9110 allows it, narrowed to what header names are in practice.
    static func isHeaderName(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D || $0 == 0x5F }
    }

    static func isVariableName(_ s: String) -> Bool {
        guard let first = s.utf8.first, !(first >= 0x30 && first <= 0x39) else { return false }
        return s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x5F }
    }
}
