/// Integers written as ASCII decimal straight into byte buffers: the one routine for report rows
/// and the content-length header field, both written once per push, where a String per number
/// would cost an allocation each.
public enum DecimalDigits {
    public static func append(_ n: Int, to out: inout [UInt8]) {
        if n < 0 { out.append(UInt8(ascii: "-")) }
        var v = n.magnitude
        var divisor: UInt = 1
        while v / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            out.append(UInt8(ascii: "0") + UInt8(v / divisor))
            v %= divisor
            divisor /= 10
        }
    }
}
