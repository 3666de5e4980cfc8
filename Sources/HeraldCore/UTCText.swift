import Foundation

/// Times in messages and status lines: ISO 8601 UTC to the second (`2026-12-01T08:00:00Z`).
public enum UTCText {
    public static func seconds(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: date)
    }
}
