/// A Live Activity broadcast channel id as APNs returns it: "a base64-encoded string"
/// (https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns).
/// Apple publishes no maximum length ("don't make assumptions on the channel ID size").
public enum BroadcastChannelId {
    /// Standard base64: letters, digits, `+` and `/`, a length that is a multiple of 4, at most two
    /// `=` at the end.
    public static func isWellFormed(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count % 4 == 0 else { return false }
        var padding = 0
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "="): padding += 1
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "+"), UInt8(ascii: "/"):
                if padding > 0 { return false }
            default: return false
            }
        }
        return padding <= 2
    }
}
