internal import CZlib
internal import HeraldCore

/// One zlib inflate stream over a gzip file, owned here and freed in `deinit`.
///
/// Reads every member of a multi-member file (`cat a.gz b.gz`, what `pigz` and log rotation
/// produce): zlib stops at the end of each member with Z_STREAM_END, and if input remains we
/// `inflateReset` and go on. gzip(1) does the same; stopping at the first member would
/// silently drop the rest of the audience.
final class GzipInflater {
    /// 15 window bits + 16: gzip wrapper only. We only get here after seeing the gzip magic,
    /// so a zlib or raw stream in a later member is corruption, not something to guess at.
    private static let windowBits: Int32 = 15 + 16

    private let input: FileInput
    private let stream: UnsafeMutablePointer<z_stream>
    /// True between members: the last inflate call ended one and nothing of the next is read.
    private var atMemberBoundary = false
    private var finished = false

    init(input: FileInput) throws(AudienceError) {
        self.input = input
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let rc = herald_inflateInit2(stream, Self.windowBits)
        guard rc == Z_OK else {
            let detail = Self.message(stream, rc)
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw .zlib(file: input.name, detail: "inflateInit2 failed: \(detail)")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Compressed bytes zlib has actually consumed (file bytes read minus those still queued).
    var consumedBytes: Int { input.bytesRead - Int(stream.pointee.avail_in) }

    /// Inflates up to `count` bytes into `destination`; 0 only at the clean end of the last member.
    func inflate(into destination: UnsafeMutablePointer<UInt8>, count: Int) throws(AudienceError) -> Int {
        if finished || count == 0 { return 0 }
        let capacity = UInt32(clamping: count)
        stream.pointee.next_out = destination
        stream.pointee.avail_out = capacity
        while stream.pointee.avail_out == capacity {
            if stream.pointee.avail_in == 0 {
                let chunk = try input.nextChunk()
                if chunk.isEmpty {
                    if atMemberBoundary {
                        finished = true
                        return 0
                    }
                    throw .truncatedGzip(file: input.name, offset: input.bytesRead)
                }
                // zlib never writes through next_in; the pointer is mutable only in its C declaration.
                stream.pointee.next_in = UnsafeMutablePointer(mutating: chunk.baseAddress)
                stream.pointee.avail_in = UInt32(chunk.count)
            }
            let rc = CZlib.inflate(stream, Z_NO_FLUSH)
            switch rc {
            case Z_OK:
                atMemberBoundary = false
            case Z_STREAM_END:
                // "Z_STREAM_END if the end of the compressed data has been reached and all
                // uncompressed output has been produced" (zlib.h, https://zlib.net/manual.html).
                // The next member, if any, needs a fresh header parse.
                atMemberBoundary = true
                let reset = inflateReset(stream)
                guard reset == Z_OK else {
                    throw .zlib(file: input.name, detail: "inflateReset failed: \(Self.message(stream, reset))")
                }
            case Z_BUF_ERROR:
                // No progress possible: only legitimate when zlib has eaten all input.
                guard stream.pointee.avail_in == 0 else {
                    throw .corruptGzip(file: input.name, offset: consumedBytes, detail: "inflate made no progress")
                }
            case Z_DATA_ERROR, Z_NEED_DICT:
                throw .corruptGzip(file: input.name, offset: consumedBytes, detail: Self.message(stream, rc))
            default:
                throw .zlib(file: input.name, detail: "inflate failed: \(Self.message(stream, rc))")
            }
        }
        return Int(capacity - stream.pointee.avail_out)
    }

    /// zlib's own message for the stream if it set one, else the return code's name.
    private static func message(_ stream: UnsafeMutablePointer<z_stream>, _ rc: Int32) -> String {
        if let msg = stream.pointee.msg { return String(cString: msg) }
        switch rc {
        case Z_NEED_DICT: return "stream needs a preset dictionary"
        case Z_DATA_ERROR: return "invalid data"
        case Z_MEM_ERROR: return "out of memory"
        case Z_VERSION_ERROR: return "zlib version mismatch"
        case Z_STREAM_ERROR: return "inconsistent stream state"
        default: return "return code \(rc)"
        }
    }
}
