import Foundation

/// The one cut applied to text that may echo a secret back: whatever a remote server says (a
/// webhook's or a Pushgateway's answer, a transport error about a URL) before it reaches a log
/// line, stdout, a ping's body or summary.json.
///
/// A server may quote a credential in another case or without its scheme ("bad auth:
/// supersecret123" for `Authorization: Bearer SuperSecret123`), so each secret is searched for
/// case-insensitively, whole and by its meaningful parts:
/// - a header value: the whole value, the credentials after an auth scheme (`Bearer x`,
///   `Basic x`), a Basic credential's decoded `user:password` and password;
/// - a URL: the `user:password@` part and its password, and every path segment and query value
///   of 8 characters or more (a healthchecks.io check's UUID, a ping key, a token in a query),
///   as written and percent-decoded.
/// Parts under 4 characters are not searched for: they cannot be told from ordinary words.
public struct SecretRedaction: Sendable, Equatable {
    public static let marker = "[redacted]"
    /// Lower-cased (ASCII) needles, longest first so a whole value goes before its parts.
    private var needles: [[UInt8]] = []

    public init(headerValues: [String] = [], urls: [String] = []) {
        for value in headerValues { add(headerValue: value) }
        for url in urls { add(url: url) }
    }

    public mutating func add(headerValue value: String) {
        add(value)
        let words = value.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard words.count >= 2 else { return }
        let credentials = words.dropFirst().joined(separator: " ")
        add(credentials)
        for piece in credentials.split(whereSeparator: { $0 == "," || $0 == " " }) {
            // `key="value"` parameters (Digest, custom schemes): the value.
            if let eq = piece.firstIndex(of: "=") {
                add(String(piece[piece.index(after: eq)...]).trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
            }
        }
        if words[0].lowercased() == "basic", let data = Data(base64Encoded: String(words[1])),
           let pair = String(data: data, encoding: .utf8) {
            add(pair)
            if let colon = pair.firstIndex(of: ":") { add(String(pair[pair.index(after: colon)...])) }
        }
    }

    public mutating func add(url: String) {
        guard let parts = URLComponents(string: url) else { add(url); return }
        if let password = parts.percentEncodedPassword {
            add(password)
            add(parts.password ?? "")
            add((parts.percentEncodedUser ?? "") + ":" + password)
        }
        var pieces = parts.percentEncodedPath.split(separator: "/").map(String.init)
        pieces += (parts.percentEncodedQueryItems ?? []).compactMap(\.value)
        for piece in pieces where piece.count >= 8 {
            add(piece)
            add(piece.removingPercentEncoding ?? piece)
        }
    }

    private mutating func add(_ secret: String) {
        let bytes = Array(secret.utf8).map(Self.lower)
        guard bytes.count >= 4, !needles.contains(bytes) else { return }
        needles.append(bytes)
        needles.sort { $0.count > $1.count }
    }

    /// `text` with every secret (in any letter case) replaced by `[redacted]`.
    public func apply(_ text: String) -> String {
        guard !needles.isEmpty else { return text }
        var bytes = Array(text.utf8)
        for needle in needles {
            // ASCII lower-casing keeps every byte where it was, so offsets found in the folded
            // copy are offsets in the text.
            let folded = bytes.map(Self.lower)
            guard folded.count >= needle.count else { continue }
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count)
            var i = 0
            while i < bytes.count {
                if i + needle.count <= bytes.count, folded[i] == needle[0], folded[i..<i + needle.count].elementsEqual(needle) {
                    out.append(contentsOf: Self.marker.utf8)
                    i += needle.count
                } else {
                    out.append(bytes[i])
                    i += 1
                }
            }
            bytes = out
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// What a server's answer may contribute to a message: at most `limit` characters on one
    /// line, cut after the secrets are (so no part of one survives the cut), control characters
    /// and runs of white space made single spaces.
    public func excerpt(_ body: [UInt8], limit: Int = 200) -> String {
        let text = apply(String(decoding: body, as: UTF8.self))
        var out = ""
        var space = false
        for c in text.unicodeScalars {
            if c.properties.isWhitespace || c.value < 0x20 || c.value == 0x7F {
                space = !out.isEmpty
                continue
            }
            if space { out.unicodeScalars.append(" "); space = false }
            out.unicodeScalars.append(c)
            if out.count >= limit { return out + "…" }
        }
        return out
    }

    /// A URL as a message may show it: any `user:password@` part replaced by `…@`.
    public static func withoutCredentials(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let authority = url[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard let at = authority.lastIndex(of: "@") else { return url }
        return String(url[..<scheme.upperBound]) + "…@" + String(url[url.index(after: at)...])
    }

    private static func lower(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b + 0x20 : b }
}
