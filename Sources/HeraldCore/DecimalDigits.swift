/// Integers written as ASCII decimal straight into byte buffers: the one routine for report rows
/// and the content-length header field, both written once per push, where a String per number
/// would cost an allocation each.
public enum DecimalDigits {
    public static func append(_ n: Int, to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maxCount) { digits in
            let count = write(n, to: digits.baseAddress!)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[..<count]))
        }
    }

    /// The most bytes `write` takes (`Int.min`: a sign and 19 digits).
    public static let maxCount = 20

    /// Writes `n` at `p`, which has room for `maxCount` bytes, and returns how many it wrote.
    public static func write(_ n: Int, to p: UnsafeMutablePointer<UInt8>) -> Int {
        var at = 0
        if n < 0 { p[0] = UInt8(ascii: "-"); at = 1 }
        var v = n.magnitude
        var digits = 1
        var scale: UInt = 10
        while v >= scale && digits < 20 { digits += 1; scale = scale &* 10 }
        let end = at + digits
        var i = end
        repeat {
            i -= 1
            p[i] = UInt8(ascii: "0") + UInt8(v % 10)
            v /= 10
        } while v > 0
        return end
    }
}

extension DecimalDigits {
    /// 1234567 → "1,234,567": how every count herald prints for people is written (summary
    /// lines, progress, `herald validate`), the same whatever the locale.
    public static func grouped(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return n < 0 ? "-" + out : out
    }
}
