#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
internal import HeraldCore

/// NDJSON rows of one file: one JSON object per line; blank lines skipped; the last line may
/// lack its newline. A line that is not a JSON object is an invalid row, and reading goes on.
struct NDJSONRows {
    let fileName: String
    private var parser = JSONLineParser()
    /// Physical line (1-based) of the next line.
    private(set) var line = 1

    init(fileName: String) { self.fileName = fileName }

    /// The next line's length without its LF (and CR), and the bytes to consume; nil at end of file.
    private func nextLine(_ window: ByteWindow) throws(AudienceError) -> (length: Int, consumed: Int)? {
        var searched = 0
        while true {
            let remaining = window.count - searched
            if remaining > 0, let hit = memchr(window.current + searched, 0x0A, remaining) {
                let lf = window.current.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                let length = lf > 0 && window.current[lf - 1] == 0x0D ? lf - 1 : lf
                return (length, lf + 1)
            }
            searched = window.count
            guard try window.fill(line: line) else {
                let n = window.count
                if n == 0 { return nil }
                return (window.current[n - 1] == 0x0D ? n - 1 : n, n)
            }
        }
    }

    mutating func next(_ window: ByteWindow, mapping: FieldMapping) throws(AudienceError) -> AudienceEvent? {
        while let (length, consumed) = try nextLine(window) {
            let location = RowLocation(file: fileName, line: line)
            let bytes = UnsafeBufferPointer(start: window.current, count: length)
            line += 1
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {
                window.start += consumed
                continue
            }
            let event: AudienceEvent
            do throws(JSONLineParser.Failure) {
                event = TokenCheck.event(fields: try parser.parse(bytes), location: location, mapping: mapping)
            } catch {
                switch error {
                case .syntax(let detail):
                    event = .invalid(InvalidRow(location: location, reason: .malformedJSON, field: "", detail: detail))
                case .badUTF8(let field, let detail):
                    event = .invalid(InvalidRow(location: location, reason: .badUTF8, field: field, detail: detail))
                }
            }
            window.start += consumed
            return event
        }
        return nil
    }
}
