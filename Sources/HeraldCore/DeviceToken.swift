/// A device token in canonical form: lowercase hex, no spaces or angle brackets.
///
/// Apple: "Don't make assumptions about device token size." Tokens are 32 bytes today,
/// so the accepted range is deliberately wide (8 to 256 bytes) and only rejects what
/// cannot be a token at all.
public struct DeviceToken: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Lowercase hex text, as sent in `:path`.
    public let hex: String

    public static let minimumBytes = 8
    public static let maximumBytes = 256

    /// Why a raw token could not be normalized.
    public enum Problem: Error, Equatable, Sendable {
        case empty
        case notHex(position: Int)
        case oddLength(Int)
        case implausibleLength(bytes: Int)

        public var message: String {
            switch self {
            case .empty: return "device token is empty"
            case .notHex(let p): return "device token has a non-hex character at position \(p + 1)"
            case .oddLength(let n): return "device token has an odd number of hex digits (\(n))"
            case .implausibleLength(let b):
                return "device token is \(b) bytes; expected \(DeviceToken.minimumBytes)-\(DeviceToken.maximumBytes)"
            }
        }
    }

    private init(canonical: String) { self.hex = canonical }

    /// Normalizes what exports contain: surrounding spaces, `<` `>` and inner spaces
    /// (as old iOS `description` output printed tokens), upper-case hex.
    public static func normalize(_ raw: String) -> Result<DeviceToken, Problem> {
        normalize(utf8: Array(raw.utf8))
    }

    /// Byte-level normalization; the audience reader calls this on every row.
    public static func normalize<C: Collection>(utf8 raw: C) -> Result<DeviceToken, Problem> where C.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity(raw.count)
        var position = 0
        for byte in raw {
            defer { position += 1 }
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"):
                out.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "F"):
                out.append(byte + 32)
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "<"), UInt8(ascii: ">"):
                continue
            default:
                return .failure(.notHex(position: position))
            }
        }
        if out.isEmpty { return .failure(.empty) }
        if out.count % 2 != 0 { return .failure(.oddLength(out.count)) }
        let bytes = out.count / 2
        if bytes < minimumBytes || bytes > maximumBytes { return .failure(.implausibleLength(bytes: bytes)) }
        return .success(DeviceToken(canonical: String(decoding: out, as: UTF8.self)))
    }

    /// For tokens already known to be canonical (read back from the state file).
    public init(trustedCanonical hex: String) { self.hex = hex }

    /// First 8 hex digits: what logs show unless asked for more (tokens are personal data).
    public var redacted: String { String(hex.prefix(8)) + "…" }
    public var description: String { redacted }
    public static func < (a: DeviceToken, b: DeviceToken) -> Bool { a.hex < b.hex }
}
