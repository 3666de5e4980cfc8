/// What log lines must not carry, applied to every message and metadata value on its way out, so
/// that no call site has to remember it (an error text quoting a `/3/device/<token>` path is
/// caught as well as a deliberate `token=` field).
///
/// - Device tokens are personal data: any run of 16 or more hex digits (the shortest token herald
///   accepts is 8 bytes) is cut to its first 8 digits and `…`, unless `--log-sensitive`. UUIDs
///   (apns-id, run id) have no such run and stay whole.
/// - Secrets are never shown, `--log-sensitive` or not: a JWT (three base64url parts, the first
///   starting `eyJ`, the encoding of `{"`) becomes `[jwt redacted]`; a PEM block (a .p8 key)
///   becomes `[pem redacted]`.
///
/// Works on UTF-8 bytes in one pass per rule; logs are a handful of lines per second at most.
public struct LogRedaction: Sendable {
    /// Show device tokens in full (`--log-sensitive`).
    public var showTokens: Bool

    public init(showTokens: Bool = false) { self.showTokens = showTokens }

    public func apply(_ text: String) -> String {
        var bytes = Array(text.utf8)
        if bytes.count < 16 { return text }
        bytes = Self.redactPEM(bytes)
        bytes = Self.redactJWTs(bytes)
        if !showTokens { bytes = Self.shortenHexRuns(bytes) }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func isHex(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x66) || (b >= 0x41 && b <= 0x46)
    }

    static func isBase64URL(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F
    }

    static func shortenHexRuns(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            guard isHex(bytes[i]) else { out.append(bytes[i]); i += 1; continue }
            var j = i
            while j < bytes.count && isHex(bytes[j]) { j += 1 }
            if j - i >= 16 {
                out.append(contentsOf: bytes[i..<i + 8])
                out.append(contentsOf: Array("…".utf8))
            } else {
                out.append(contentsOf: bytes[i..<j])
            }
            i = j
        }
        return out
    }

    static func redactJWTs(_ bytes: [UInt8]) -> [UInt8] {
        let marker = Array("eyJ".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == marker[0], i + 3 <= bytes.count, Array(bytes[i..<i + 3]) == marker,
               i == 0 || !isBase64URL(bytes[i - 1]) {
                // Three base64url parts separated by dots (the signature may be empty).
                var j = i
                var dots = 0
                while j < bytes.count && (isBase64URL(bytes[j]) || (bytes[j] == 0x2E && dots < 2)) {
                    if bytes[j] == 0x2E { dots += 1 }
                    j += 1
                }
                if dots == 2 {
                    out.append(contentsOf: Array("[jwt redacted]".utf8))
                    i = j
                    continue
                }
            }
            out.append(bytes[i])
            i += 1
        }
        return out
    }

    static func redactPEM(_ bytes: [UInt8]) -> [UInt8] {
        let begin = Array("-----BEGIN ".utf8)
        let end = Array("-----END ".utf8)
        guard let start = find(begin, in: bytes, from: 0) else { return bytes }
        var out = Array(bytes[..<start])
        out.append(contentsOf: Array("[pem redacted]".utf8))
        // Up to the end of the END line's closing dashes; everything after a BEGIN with no END goes.
        if let e = find(end, in: bytes, from: start), let close = find(Array("-----".utf8), in: bytes, from: e + end.count) {
            out.append(contentsOf: redactPEM(Array(bytes[(close + 5)...])))
        }
        return out
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        var i = from
        while i + needle.count <= haystack.count {
            if haystack[i] == needle[0] && Array(haystack[i..<i + needle.count]) == needle { return i }
            i += 1
        }
        return nil
    }
}
