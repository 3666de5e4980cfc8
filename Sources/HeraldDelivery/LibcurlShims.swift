internal import CCurlNghttp2
import Synchronization

/// Whether CCurlNghttp2's shims carry this process's requests. They define nghttp2 functions
/// inside herald so that libcurl's calls into libnghttp2 reach them first, and they rely on how
/// one libcurl calls one nghttp2 (which callbacks it registers, that it formats the request
/// itself, that it resets every finished stream). So each is engaged only where that pair was
/// verified by a run of the whole suite, and an operator can turn them all off; off, every
/// request goes through plain libcurl (docs/delivery.md, "The libcurl shims").
///
/// Decided once per process, before the first connection: a session libcurl opened while a
/// shim was off keeps libcurl's own callbacks.
public enum LibcurlShims {
    /// One shim, by what it changes.
    public enum Shim: String, CaseIterable, Sendable {
        case closedStreams = "closed_streams"
        case coalescedWrites = "coalesced_writes"
        case requestHeaders = "request_headers"
        case responseHeaders = "response_headers"

        var bit: UInt32 {
            switch self {
            case .closedStreams: UInt32(HERALD_SHIM_CLOSED_STREAMS)
            case .coalescedWrites: UInt32(HERALD_SHIM_COALESCED_WRITES)
            case .requestHeaders: UInt32(HERALD_SHIM_REQUEST_HEADERS)
            case .responseHeaders: UInt32(HERALD_SHIM_RESPONSE_HEADERS)
            }
        }
    }

    /// The libcurl and nghttp2 version prefixes each shim was verified on (a run of the whole
    /// suite, shims on and off). Extend only with such a run on the new pair.
    static let verified: [(libcurl: String, nghttp2: String)] = [("7.88.", "1.52.")]

    /// What was decided, and why any shim is off.
    public struct Decision: Sendable, Equatable {
        public var engaged: Set<Shim>
        /// Empty when every shim is engaged.
        public var reason: String

        /// For the log: which shims carry the requests, or why none does.
        public var summary: String {
            if engaged.count == Shim.allCases.count { return "libcurl shims engaged: " + Shim.allCases.map(\.rawValue).joined(separator: ", ") }
            return "libcurl shims off (\(reason)): requests go through plain libcurl"
        }
    }

    /// The environment variable that turns the shims off whatever the job says (`off`).
    public static let environmentVariable = "HERALD_LIBCURL_SHIMS"

    /// The decision for these versions: `requested` is the job's `apns.libcurl_shims`, and the
    /// environment's `HERALD_LIBCURL_SHIMS` wins over it.
    public static func decide(libcurl: String, nghttp2: String?, requested: Bool, environment: [String: String]) -> Decision {
        if let value = environment[environmentVariable] {
            switch value.lowercased() {
            case "off", "0", "false", "no": return Decision(engaged: [], reason: "\(environmentVariable)=\(value)")
            default: break
            }
        }
        if !requested { return Decision(engaged: [], reason: "apns.libcurl_shims: off") }
        guard let nghttp2 else { return Decision(engaged: [], reason: "libcurl \(libcurl) has no nghttp2") }
        guard verified.contains(where: { libcurl.hasPrefix($0.libcurl) && nghttp2.hasPrefix($0.nghttp2) }) else {
            let known = verified.map { "libcurl \($0.libcurl)x with nghttp2 \($0.nghttp2)x" }.joined(separator: "; ")
            return Decision(engaged: [], reason: "libcurl \(libcurl) with nghttp2 \(nghttp2) is not a verified pair (\(known))")
        }
        return Decision(engaged: Set(Shim.allCases), reason: "")
    }

    private static let decided = Mutex<Decision?>(nil)

    /// Decides once for this process from the loaded libraries and the environment, and engages
    /// what was decided; later calls return the first decision (`requested` only counts the
    /// first time: `herald run` calls this before its first connection).
    @discardableResult
    public static func engage(requested: Bool = true, environment: [String: String]) -> Decision {
        decided.withLock { current in
            if let current { return current }
            let d = decide(libcurl: LinkedLibraries.libcurl, nghttp2: LinkedLibraries.nghttp2, requested: requested, environment: environment)
            herald_shims_engage(d.engaged.reduce(0) { $0 | $1.bit })
            current = d
            return d
        }
    }

    /// The shims engaged in this process now.
    public static var engaged: Set<Shim> {
        let mask = herald_shims_engaged()
        return Set(Shim.allCases.filter { mask & $0.bit != 0 })
    }
}
