#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
internal import HeraldCore

/// NDJSON rows: one JSON object per line; blank lines skipped; the last line may lack its newline.
extension AudienceFileReader {
    /// The next line's length without its LF (and CR), and the bytes to consume; nil at end of file.
    private func nextLine() throws(AudienceError) -> (length: Int, consumed: Int)? {
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
                if window.count == 0 { return nil }
                let n = window.count
                return (n > 0 && window.current[n - 1] == 0x0D ? n - 1 : n, n)
            }
        }
    }

    func nextNDJSON() throws(AudienceError) -> AudienceEvent? {
        while let (length, consumed) = try nextLine() {
            let location = RowLocation(file: file.name, line: line)
            let bytes = UnsafeBufferPointer(start: window.current, count: length)
            line += 1
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {
                window.start += consumed
                continue
            }
            let event: AudienceEvent
            do throws(JSONLineParser.Failure) {
                event = self.event(fields: try json.parse(bytes), location: location)
            } catch {
                switch error {
                case .syntax(let detail):
                    event = .invalid(InvalidRow(location: location, reason: .malformedJSON, field: "", detail: detail))
                case .badUTF8(let field, let detail):
                    event = .invalid(InvalidRow(location: location, reason: .badUTF8, field: field, detail: detail))
                }
            }
            window.start += consumed
            rowsRead += 1
            return event
        }
        return nil
    }
}
