/// Lowercase hex digits by value: the one table for every byte herald writes as hex (apns-ids,
/// hashed collapse ids, JSON `\u00XX` escapes).
public enum HexDigits {
    public static let lowercase: [UInt8] = Array("0123456789abcdef".utf8)
}
