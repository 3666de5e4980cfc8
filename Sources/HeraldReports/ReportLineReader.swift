internal import CZlib
import Foundation

/// Reads a report file line by line, gzip-compressed or plain (zlib's gz* functions read both),
/// owned here and closed in `deinit`. Used to merge shards' reports: memory is one line.
final class ReportLineReader {
    let path: String
    private let file: gzFile
    private var buffer = [CChar](repeating: 0, count: 1 << 16)

    init(path: String) throws(ReportError) {
        self.path = path
        guard let f = gzopen(path, "rb") else { throw ReportError(path: path, why: "cannot open for reading") }
        file = f
    }

    deinit { gzclose(file) }

    /// The next line without its newline, or nil at the end of the file.
    func next() throws(ReportError) -> String? {
        var line: [UInt8] = []
        while true {
            let got = buffer.withUnsafeMutableBufferPointer { gzgets(file, $0.baseAddress, Int32($0.count)) }
            guard got != nil else {
                var code: Int32 = 0
                let message = gzerror(file, &code)
                if code != Z_OK && code != Z_STREAM_END {
                    throw ReportError(path: path, why: "cannot read: \(message.map { String(cString: $0) } ?? "zlib error \(code)")")
                }
                return line.isEmpty ? nil : String(decoding: line, as: UTF8.self)
            }
            let n = buffer.withUnsafeBufferPointer { strlen($0.baseAddress!) }
            line.append(contentsOf: buffer[0..<n].map { UInt8(bitPattern: $0) })
            if line.last == 0x0A {
                line.removeLast()
                if line.last == 0x0D { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
        }
    }
}
