/// Checks that a body is one JSON object whose `aps` member is an object, on bytes.
///
/// Every request that passes the header checks goes through this, so it must not allocate per
/// value: Foundation's JSONSerialization builds the whole tree, which would cost the simulator a
/// large share of its throughput. This is a validating recursive-descent scan (RFC 8259 grammar,
/// nesting capped at 64) that remembers only whether the top-level `aps` was an object.
enum JSONShape {
    static let maximumDepth = 64

    static func isObjectWithApsDictionary(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = Scanner(bytes: buffer)
            return scanner.topLevel()
        }
    }

    private enum Kind { case object, other }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func topLevel() -> Bool {
            skipSpace()
            guard peek == UInt8(ascii: "{") else { return false }
            var apsIsObject = false
            guard object(depth: 1, apsIsObject: &apsIsObject) else { return false }
            skipSpace()
            return i == bytes.count && apsIsObject
        }

        var peek: UInt8? { i < bytes.count ? bytes[i] : nil }

        mutating func skipSpace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
        }

        /// At `{`. With `apsIsObject` (top level only) it records whether member `aps` is an object.
        mutating func object(depth: Int, apsIsObject: inout Bool) -> Bool {
            i += 1
            skipSpace()
            if peek == UInt8(ascii: "}") { i += 1; return true }
            while true {
                guard peek == UInt8(ascii: "\"") else { return false }
                guard let isAps = string(comparingTo: depth == 1 ? Self.aps : nil) else { return false }
                skipSpace()
                guard peek == UInt8(ascii: ":") else { return false }
                i += 1
                skipSpace()
                guard let kind = value(depth: depth) else { return false }
                if isAps { apsIsObject = kind == .object }
                skipSpace()
                switch peek {
                case UInt8(ascii: ","): i += 1; skipSpace()
                case UInt8(ascii: "}"): i += 1; return true
                default: return false
                }
            }
        }

        mutating func array(depth: Int) -> Bool {
            i += 1
            skipSpace()
            if peek == UInt8(ascii: "]") { i += 1; return true }
            while true {
                guard value(depth: depth) != nil else { return false }
                skipSpace()
                switch peek {
                case UInt8(ascii: ","): i += 1; skipSpace()
                case UInt8(ascii: "]"): i += 1; return true
                default: return false
                }
            }
        }

        mutating func value(depth: Int) -> Kind? {
            guard depth < JSONShape.maximumDepth, let b = peek else { return nil }
            switch b {
            case UInt8(ascii: "{"):
                var ignored = false
                return object(depth: depth + 1, apsIsObject: &ignored) ? .object : nil
            case UInt8(ascii: "["): return array(depth: depth + 1) ? .other : nil
            case UInt8(ascii: "\""): return string(comparingTo: nil) != nil ? .other : nil
            case UInt8(ascii: "t"): return literal("true") ? .other : nil
            case UInt8(ascii: "f"): return literal("false") ? .other : nil
            case UInt8(ascii: "n"): return literal("null") ? .other : nil
            default: return number() ? .other : nil
            }
        }

        static let aps: [UInt8] = Array("aps".utf8)

        /// At `"`. Returns nil if malformed, else whether the decoded text equals `target`.
        mutating func string(comparingTo target: [UInt8]?) -> Bool? {
            i += 1
            var matched = 0
            var equal = target != nil
            func feed(_ b: UInt8) {
                guard equal, let target else { return }
                if matched < target.count && target[matched] == b { matched += 1 } else { equal = false }
            }
            while i < bytes.count {
                let b = bytes[i]
                i += 1
                switch b {
                case UInt8(ascii: "\""): return equal && matched == (target?.count ?? 0)
                case 0x00..<0x20: return nil
                case UInt8(ascii: "\\"):
                    guard let e = peek else { return nil }
                    i += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): feed(e)
                    case UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"): equal = false
                    case UInt8(ascii: "u"):
                        var code: UInt32 = 0
                        for _ in 0..<4 {
                            guard let h = peek, let d = Self.hexValue(h) else { return nil }
                            code = code << 4 | d
                            i += 1
                        }
                        if code < 0x80 { feed(UInt8(code)) } else { equal = false }
                    default: return nil
                    }
                default: feed(b)
                }
            }
            return nil
        }

        static func hexValue(_ b: UInt8) -> UInt32? {
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(b - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(b - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(b - UInt8(ascii: "A") + 10)
            default: return nil
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let n = word.utf8CodeUnitCount
            guard i + n <= bytes.count else { return false }
            let w = word.utf8Start
            for k in 0..<n where bytes[i + k] != w[k] { return false }
            i += n
            return true
        }

        /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        mutating func number() -> Bool {
            if peek == UInt8(ascii: "-") { i += 1 }
            guard let first = peek, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { return false }
            i += 1
            if first != UInt8(ascii: "0") { digits() }
            if peek == UInt8(ascii: ".") {
                i += 1
                guard digits() > 0 else { return false }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                i += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { i += 1 }
                guard digits() > 0 else { return false }
            }
            return true
        }

        @discardableResult
        mutating func digits() -> Int {
            let start = i
            while let b = peek, b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") { i += 1 }
            return i - start
        }
    }
}
