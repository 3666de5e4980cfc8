/// A device token in canonical form: lowercase hex, no spaces or angle brackets.
///
/// Apple: "Don't make assumptions about device token size" (https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns). Tokens are 32 bytes today,
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
        /// A broadcast audience's channel id (`audience.channel_field`) that is not base64.
        case notChannelId

        public var message: String {
            switch self {
            case .empty: return "device token is empty"
            case .notHex(let p): return "device token has a non-hex character at position \(p + 1)"
            case .oddLength(let n): return "device token has an odd number of hex digits (\(n))"
            case .implausibleLength(let b):
                return "device token is \(b) bytes; expected \(DeviceToken.minimumBytes)-\(DeviceToken.maximumBytes)"
            case .notChannelId:
                return "not a broadcast channel id: APNs gives base64 text (letters, digits, + and /, = at the end), as `herald channels create` prints it"
            }
        }
    }

    @usableFromInline init(canonical: String) { self.hex = canonical }

    /// Normalizes what exports contain: surrounding spaces, `<` `>` and inner spaces
    /// (as old iOS `description` output printed them), upper-case hex.
    public static func normalize(_ raw: String) -> Result<DeviceToken, Problem> {
        var raw = raw
        return raw.withUTF8 { normalize(utf8: $0) }
    }

    /// Byte-level normalization, for the audience reader's field bytes. Inlinable so that the
    /// reader's call is specialized for its buffer type: a cross-module call of this generic
    /// function runs unspecialized, a witness-table call per byte. The token's String is written
    /// in place: one allocation.
    @inlinable
    public static func normalize<C: Collection>(utf8 raw: C) -> Result<DeviceToken, Problem> where C.Element == UInt8 {
        var problem: Problem?
        let hex = String(unsafeUninitializedCapacity: raw.count) { out -> Int in
            var n = 0
            var position = 0
            for byte in raw {
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"):
                    out[n] = byte
                    n += 1
                case UInt8(ascii: "A")...UInt8(ascii: "F"):
                    out[n] = byte + 32
                    n += 1
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "<"), UInt8(ascii: ">"):
                    break
                default:
                    problem = .notHex(position: position)
                    return 0
                }
                position += 1
            }
            if n == 0 {
                problem = .empty
            } else if n % 2 != 0 {
                problem = .oddLength(n)
            } else if n / 2 < minimumBytes || n / 2 > maximumBytes {
                problem = .implausibleLength(bytes: n / 2)
            }
            return problem == nil ? n : 0
        }
        if let problem { return .failure(problem) }
        return .success(DeviceToken(canonical: hex))
    }

    /// For tokens already known to be canonical (read back from the state file).
    public init(trustedCanonical hex: String) { self.hex = hex }

    /// A broadcast campaign's recipient is a channel: its id (base64, checked by
    /// `BroadcastChannelId.isWellFormed`) takes the token's place in the state file, through
    /// deduplication, claims and retries, and the broadcast sender reads it back as the channel
    /// (`hex` is then the channel id as APNs wrote it, not hex). Reports write it as `channel_id`.
    public init(broadcastChannel id: String) { self.hex = id }

    /// First 8 hex digits: what logs show unless asked for more (tokens are personal data).
    public var redacted: String { String(hex.prefix(8)) + "…" }
    public var description: String { redacted }
    public static func < (a: DeviceToken, b: DeviceToken) -> Bool { a.hex < b.hex }
}
