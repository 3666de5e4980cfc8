import Foundation
import HeraldCore
import Yams

/// `apns.apps`, `apns.endpoints` and the credentials (`auth` or `certificate`) of the job or of
/// each app (docs/many-apps.md). One parser for the credentials, wherever they are written.
extension Context {
    static let appKeys = ["name", "topic", "auth", "certificate", "connections", "streams_per_connection"]

    /// `apns.apps`: each app's name (what the audience's app field holds), topic and credentials.
    /// Empty when the job has none (it has `apns.topic`).
    func parseApps(_ m: inout YAMLMapping, endpoint: APNsEndpoint) throws(JobError) -> [AppSpec] {
        guard let (node, line) = m.node("apps") else { return [] }
        guard case .sequence(let items) = node, !items.isEmpty else {
            throw JobError(file: file, line: line, "apns.apps must be a list of apps such as { name: acme, topic: com.acme.app, auth: {...} }")
        }
        var apps: [AppSpec] = []
        var topics: [String: String] = [:]
        var keys: [String: (key: KeySource, app: String)] = [:]
        for (i, item) in items.enumerated() {
            var a = try YAMLMapping(item, path: "apns.apps[\(i)]", file: file)
            try a.rejectUnknown(known: Self.appKeys)
            let name = try a.requiredString("name")
            // Names go into report columns, metric labels and file names: a plain word.
            guard name.utf8.count <= 64, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) else {
                throw a.error("name", "may contain only letters, digits, '.', '_' and '-' (at most 64), not \"\(name)\"")
            }
            if apps.contains(where: { $0.name == name }) { throw a.error("name", "\"\(name)\" is given to two apps") }
            let topic = try a.requiredString("topic")
            if let other = topics[topic] {
                // Deduplication, frequency caps and the suppression list go by topic and token: two
                // names for one topic would send one device the same campaign twice.
                throw a.error("topic", "\(topic) is already app \(other)'s: one app per topic")
            }
            topics[topic] = name
            let (auth, certificate) = try parseCredentials(&a, endpoint: endpoint)
            if let auth {
                // One team key is one provider token, shared by the apps that name it.
                let id = "\(auth.teamId)/\(auth.keyId)"
                if let other = keys[id], other.key != auth.key {
                    throw a.error("auth", "names key \(auth.keyId) of team \(auth.teamId) as app \(other.app) does, with another key_file or key_env: one key id is one key")
                }
                keys[id] = (auth.key, name)
            }
            var app = AppSpec(name: name, topic: topic, auth: auth, certificate: certificate)
            app.line = a.line
            app.connections = try a.int("connections", range: 1...64)
            app.streamsPerConnection = try a.int("streams_per_connection", range: 1...1000)
            try a.finish(known: Self.appKeys)
            apps.append(app)
        }
        return apps
    }

    /// What `apns.apps` and the audience's app and environment fields need of each other.
    func checkApps(_ apns: APNsSpec, audience: AudienceSpec?, audienceMap: YAMLMapping?, apnsMap: YAMLMapping, broadcast: Bool) throws(JobError) {
        let appField = audience?.appField, environmentField = audience?.environmentField
        // A broadcast that lists its channels has no audience: its mapping names each channel's app.
        if apns.apps.count > 1 && appField == nil && audience != nil {
            throw JobError(file: file, line: audienceMap?.line ?? apnsMap.line,
                           "audience.app_field is required with more than one app in apns.apps: it names each row's app")
        }
        if appField != nil && apns.apps.isEmpty, let a = audienceMap {
            throw a.error("app_field", "needs apns.apps: the names it holds are the apps' names")
        }
        if environmentField != nil, case .custom = apns.endpoint, let a = audienceMap {
            throw a.error("environment_field", "needs endpoint: production, sandbox or simulator; point each environment elsewhere with apns.endpoints")
        }
        if apns.environmentFallback && broadcast {
            throw apnsMap.error("environment_fallback", "does not apply to a broadcast: a channel belongs to one environment")
        }
    }

    /// `auth` (a .p8 key) or `certificate`, in `apns` or in one of `apns.apps`.
    func parseCredentials(_ m: inout YAMLMapping, endpoint: APNsEndpoint) throws(JobError) -> (TokenAuthSpec?, CertificateAuthSpec?) {
        var auth: TokenAuthSpec?
        if var a = try m.mapping("auth") {
            let team = try a.requiredString("team_id")
            let kid = try a.requiredString("key_id")
            for (k, v) in [("team_id", team), ("key_id", kid)] where v.count != 10 || !v.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
                throw a.error(k, "must be Apple's 10-character identifier, not \"\(v)\"")
            }
            let keyFile = try a.string("key_file")
            let keyEnv = try a.string("key_env")
            let source: KeySource
            switch (keyFile, keyEnv) {
            case (let f?, nil):
                let path = resolve(f)
                guard FileManager.default.fileExists(atPath: path) else {
                    throw a.error("key_file", "names a key file that does not exist: \(f) (looked for \(path))")
                }
                source = .file(path)
            case (nil, let e?): source = .environment(e)
            case (nil, nil): throw JobError(file: file, line: a.line, "\(a.path) needs key_file or key_env")
            default: throw JobError(file: file, line: a.line, "\(a.path) takes key_file or key_env, not both")
            }
            try a.finish(known: ["team_id", "key_id", "key_file", "key_env"])
            auth = TokenAuthSpec(teamId: team, keyId: kid, key: source)
        }
        let certificate = try parseCertificate(&m)
        if certificate != nil && auth != nil {
            throw m.error("certificate", "and \(m.qualified("auth")) are alternatives: give one (a certificate, or a .p8 key)")
        }
        if certificate != nil && endpoint == .simulator {
            throw m.error("certificate", "needs a real endpoint: the in-process simulator uses token auth (rehearse certificates with `herald sim --client-ca` and endpoint: https://127.0.0.1:PORT)")
        }
        if auth == nil && certificate == nil && endpoint != .simulator {
            throw JobError(file: file, line: m.line, "\(m.qualified("auth")) (or \(m.qualified("certificate"))) is required for endpoint \(endpoint.name)")
        }
        return (auth, certificate)
    }

    /// `apns.endpoints: { production: URL, sandbox: URL }`: each environment's host, when it is not
    /// Apple's (a relay, or `herald sim` in a rehearsal).
    func parseEndpoints(_ m: inout YAMLMapping, endpoint: APNsEndpoint) throws(JobError) -> [APNsEnvironment: String] {
        guard var e = try m.mapping("endpoints") else { return [:] }
        switch endpoint {
        case .production, .sandbox: break
        case .simulator, .custom:
            throw m.error("endpoints", "needs endpoint: production or sandbox (the environment rows default to); "
                          + "endpoints then says where each environment's pushes go")
        }
        var urls: [APNsEnvironment: String] = [:]
        for environment in APNsEnvironment.allCases {
            guard let text = try e.string(environment.name) else { continue }
            guard let url = URL(string: text), url.scheme == "https", url.host != nil, url.path.isEmpty || url.path == "/" else {
                throw e.error(environment.name, "must be an https://host:port URL, not \"\(text)\"")
            }
            urls[environment] = text.hasSuffix("/") ? String(text.dropLast()) : text
        }
        try e.finish(known: APNsEnvironment.allCases.map(\.name))
        return urls
    }
}
