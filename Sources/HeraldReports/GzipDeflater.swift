internal import CZlib

/// One zlib deflate stream writing the gzip format (`reports.compress: true`), owned here and
/// freed in `deinit`. Output is a single gzip member that `gzip -d`, `zcat` and herald's own
/// audience reader all read.
final class GzipDeflater {
    /// 15 window bits + 16: a gzip header and trailer instead of zlib's.
    private static let windowBits: Int32 = 15 + 16
    private let stream: UnsafeMutablePointer<z_stream>
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)

    init(path: String) throws(ReportError) {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // Level 1: on report text it is much faster than the default 6, for files only slightly
        // larger (docs/benchmarks.md#reports; the comparison: CHANGELOG.md).
        let rc = herald_deflateInit2(stream, 1, Self.windowBits)
        guard rc == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw ReportError(path: path, why: "zlib deflateInit2 failed (\(rc))")
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Compresses `input` and returns the compressed bytes produced so far; `finish` ends the member.
    func deflate(_ input: UnsafeRawBufferPointer, finish: Bool, path: String) throws(ReportError) -> [UInt8] {
        var out: [UInt8] = []
        let count = input.count
        let failed: Int32? = {
            // zlib's next_in is not const, but deflate never writes through it.
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
            stream.pointee.avail_in = UInt32(count)
            defer { stream.pointee.next_in = nil }
            while true {
                let (rc, produced) = chunk.withUnsafeMutableBufferPointer { buf -> (Int32, Int) in
                    stream.pointee.next_out = buf.baseAddress
                    stream.pointee.avail_out = UInt32(buf.count)
                    let rc = CZlib.deflate(stream, finish ? Z_FINISH : Z_NO_FLUSH)
                    return (rc, buf.count - Int(stream.pointee.avail_out))
                }
                guard rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR else { return rc }
                out.append(contentsOf: chunk[0..<produced])
                if finish ? rc == Z_STREAM_END : (stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0) { return nil }
            }
        }()
        if let failed { throw ReportError(path: path, why: "zlib deflate failed (\(failed))") }
        return out
    }
}
