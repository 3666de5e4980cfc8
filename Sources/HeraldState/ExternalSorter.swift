import Foundation
import HeraldCore

/// Sorts more fixed-size values than memory should hold: values are collected in a fixed buffer,
/// sorted, and written as sorted runs to a scratch file; `forEach` merges the runs (k-way, with a
/// heap) and hands the values back in order. Memory: the buffer (12 MiB by default), or `fanIn` 192 KiB read
/// buffers while merging (runs are merged down whenever there are `fanIn` of them). The scratch
/// file is unlinked as soon as it is created, so it disappears with the process, however it ends.
///
/// Why not SQLite's own sorter (`ORDER BY token`) for the state file's deduplication: it sorts
/// whole records with the 64-character token text in each, several times the work of sorting
/// 48-byte entries here.
///
/// Not generic on purpose: a generic sorter called from another module runs unspecialized, every
/// comparison through a witness table.
public final class ExternalSorter {
    public typealias Element = TokenEntry
    /// Values held before a run is written.
    public let runCapacity: Int
    /// Runs merged at once.
    public let fanIn: Int
    /// Equal values kept once (counting distinct values needs only that).
    public let dropsEqual: Bool
    private let directory: String
    private var values: [Element] = []
    private var file: ScratchFile?
    private var runs: [SortedRun] = []

    public init(directory: String = NSTemporaryDirectory(), runCapacity: Int = 1 << 18, fanIn: Int = 32, dropsEqual: Bool = false) {
        self.directory = directory
        self.runCapacity = max(1, runCapacity)
        self.fanIn = max(2, fanIn)
        self.dropsEqual = dropsEqual
        values.reserveCapacity(self.runCapacity)
    }

    public func insert(_ value: Element) throws(ScratchFileError) {
        values.append(value)
        if values.count >= runCapacity { try spill() }
    }

    /// Every value inserted so far, in ascending order (each once if `dropsEqual`). More values
    /// may be inserted afterwards.
    public func forEach(_ body: (Element) throws -> Void) throws {
        sortBuffer()
        guard file != nil, !runs.isEmpty else {
            for v in values { try body(v) }
            return
        }
        try spill()
        if runs.count > 1 { try mergeRuns() }
        var cursor = try RunCursor(runs[0], file: file!)
        while let v = cursor.current {
            try body(v)
            try cursor.advance()
        }
    }

    private func sortBuffer() {
        guard values.count > 1 else { return }
        values.sort()
        guard dropsEqual else { return }
        var kept = 1
        for i in 1..<values.count where values[i] != values[kept - 1] {
            values[kept] = values[i]
            kept += 1
        }
        values.removeLast(values.count - kept)
    }

    /// Writes the buffer as one sorted run; merges the runs into one when there are `fanIn`.
    private func spill() throws(ScratchFileError) {
        sortBuffer()
        if values.isEmpty { return }
        if self.file == nil { self.file = try ScratchFile(directory: directory) }
        let file = self.file!
        runs.append(try file.append(values))
        values.removeAll(keepingCapacity: true)
        if runs.count >= fanIn { try mergeRuns() }
    }

    /// Merges every run into one, in a fresh file; closing the old one frees its disk space.
    private func mergeRuns() throws(ScratchFileError) {
        let merged = try ScratchFile(directory: directory)
        let count: Int
        do {
            count = try Self.merge(runs, from: file!, into: merged, dropsEqual: dropsEqual, each: { _ in })
        } catch let e as ScratchFileError {
            throw e
        } catch {
            throw ScratchFileError(description: "\(error)")
        }
        runs = [SortedRun(offset: 0, count: count)]
        self.file = merged
    }

    /// K-way merge of sorted runs: written to `output` as one run and/or handed to `each`.
    /// Returns how many values came out.
    private static func merge(_ runs: [SortedRun], from file: ScratchFile, into output: ScratchFile?,
                              dropsEqual: Bool, each: (Element) throws -> Void) throws -> Int {
        var cursors: [RunCursor] = []
        for run in runs { cursors.append(try RunCursor(run, file: file)) }
        // A binary min-heap of cursor indices, ordered by each cursor's current value.
        var heap = cursors.indices.filter { cursors[$0].current != nil }
        func less(_ a: Int, _ b: Int) -> Bool { cursors[heap[a]].current! < cursors[heap[b]].current! }
        func siftDown(_ start: Int) {
            var i = start
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < heap.count && less(l, m) { m = l }
                if r < heap.count && less(r, m) { m = r }
                if m == i { return }
                heap.swapAt(i, m)
                i = m
            }
        }
        for i in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
        var out = 0
        var last: Element?
        var pending: [Element] = []
        if output != nil { pending.reserveCapacity(RunCursor.chunk) }
        while let top = heap.first {
            let value = cursors[top].current!
            if !dropsEqual || value != last {
                out += 1
                last = value
                if let output {
                    pending.append(value)
                    if pending.count == RunCursor.chunk { _ = try output.append(pending); pending.removeAll(keepingCapacity: true) }
                }
                try each(value)
            }
            try cursors[top].advance()
            if cursors[top].current == nil {
                heap.swapAt(0, heap.count - 1)
                heap.removeLast()
            }
            siftDown(0)
        }
        if let output, !pending.isEmpty { _ = try output.append(pending) }
        return out
    }
}

/// A sorted run of values in the scratch file.
struct SortedRun {
    /// In bytes.
    let offset: Int
    let count: Int
}

/// Reads one run in chunks.
struct RunCursor {
    typealias Element = TokenEntry
    static var chunk: Int { 4096 }
    private let file: ScratchFile
    /// Byte offset of the first value not yet buffered.
    private var next: Int
    private var remaining: Int
    private var buffer: [Element] = []
    private var index = 0
    private(set) var current: Element?

    init(_ run: SortedRun, file: ScratchFile) throws(ScratchFileError) {
        self.file = file
        next = run.offset
        remaining = run.count
        buffer.reserveCapacity(Self.chunk)
        try refill()
    }

    mutating func advance() throws(ScratchFileError) {
        index += 1
        if index < buffer.count { current = buffer[index] } else { try refill() }
    }

    private mutating func refill() throws(ScratchFileError) {
        let n = min(Self.chunk, remaining)
        guard n > 0 else { current = nil; return }
        try file.read(count: n, at: next, into: &buffer, filler: TokenEntry(key: TokenKey(high: 0, low: 0), id: 0))
        next += n * MemoryLayout<Element>.stride
        remaining -= n
        index = 0
        current = buffer[0]
    }
}

/// A device token as a sort key. A 32-byte token (64 hex digits, what APNs issues today) is its
/// own key: its bytes, so equal keys are equal tokens (`isExact`) and deduplication needs no
/// look-up to tell a repeat from a collision. Any other length is keyed by two independently
/// salted SipHash digests of its hex (the standard library's per-process-seeded `Hasher`) and its
/// length: two different tokens share such a key with probability about n²/2¹²⁹ (10⁻²³ for a
/// hundred million tokens); callers that act on "same key" either accept that (a count) or
/// compare the tokens themselves (deduplication). An exact key never equals a hashed one.
public struct TokenKey: Comparable, BitwiseCopyable, Sendable {
    public var w0: UInt64
    public var w1: UInt64
    public var w2: UInt64
    public var w3: UInt64
    public var isExact: Bool
    /// The token's app (`IngestBatch.Recipient.app`): deduplication is per app and token. It
    /// fills the key's padding (33 bytes of a 40-byte stride), so the sort holds no more bytes.
    public var app: UInt16 = 0

    /// A hashed key from two digests (tests, fillers).
    public init(high: UInt64, low: UInt64) { w0 = high; w1 = low; w2 = 0; w3 = 0; isExact = false }

    @inlinable public static func < (a: TokenKey, b: TokenKey) -> Bool {
        if a.w0 != b.w0 { return a.w0 < b.w0 }
        if a.w1 != b.w1 { return a.w1 < b.w1 }
        if a.w2 != b.w2 { return a.w2 < b.w2 }
        if a.w3 != b.w3 { return a.w3 < b.w3 }
        if a.app != b.app { return a.app < b.app }
        return !a.isExact && b.isExact
    }

    /// From canonical (lower-case) hex.
    public init(hex bytes: UnsafeRawBufferPointer) {
        if bytes.count == 64, let words = Self.words(hex: bytes) {
            (w0, w1, w2, w3) = words
            isExact = true
            return
        }
        var a = Hasher()
        a.combine(0x68_65_72_61_6c_64_2d_61 as UInt64)
        a.combine(bytes: bytes)
        var b = Hasher()
        b.combine(0x68_65_72_61_6c_64_2d_62 as UInt64)
        b.combine(bytes: bytes)
        w0 = UInt64(UInt(bitPattern: a.finalize()))
        w1 = UInt64(UInt(bitPattern: b.finalize()))
        w2 = UInt64(bytes.count)
        w3 = 0
        isExact = false
    }

    public init(_ token: DeviceToken) {
        var hex = token.hex
        self = hex.withUTF8 { TokenKey(hex: UnsafeRawBufferPointer($0)) }
    }

    /// 64 lower-case hex digits as four words; nil if any is not one (then the key is hashed).
    /// A table look-up and an OR per digit, no branch: it runs on every digit of every token
    /// sorted, where a `switch` per digit would branch 64 times a token.
    private static func words(hex: UnsafeRawBufferPointer) -> (UInt64, UInt64, UInt64, UInt64)? {
        hexDigitValues.withUnsafeBufferPointer { table in
            var invalid: UInt8 = 0
            func word(_ start: Int) -> UInt64 {
                var v: UInt64 = 0
                for i in start..<start + 16 {
                    let d = table[Int(hex[i])]
                    invalid |= d
                    v = v << 4 | UInt64(d & 0x0F)
                }
                return v
            }
            let w = (word(0), word(16), word(32), word(48))
            return invalid & 0xF0 == 0 ? w : nil
        }
    }

    /// Each byte's value as a lower-case hex digit, 0xFF for any other byte.
    private static let hexDigitValues: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, digit) in "0123456789abcdef".utf8.enumerated() { table[Int(digit)] = UInt8(value) }
        return table
    }()
}

/// What the sorter sorts: a token's key and the row it came from (0 when only tokens count).
/// Ordered by key, then row, so a token's first row comes out first.
public struct TokenEntry: Comparable, BitwiseCopyable, Sendable {
    public var key: TokenKey
    public var id: Int64
    public init(key: TokenKey, id: Int64) { self.key = key; self.id = id }
    @inlinable public static func < (a: TokenEntry, b: TokenEntry) -> Bool { a.key != b.key ? a.key < b.key : a.id < b.id }
}
