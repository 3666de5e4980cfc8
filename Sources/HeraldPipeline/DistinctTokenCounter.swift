#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import HeraldCore

/// Counts distinct device tokens in memory that does not grow with the audience: the duplicate
/// count of the audience scan.
///
/// Why not a `Set<DeviceToken>`: about 100 bytes a token, a gigabyte for ten million rows. Why not
/// a SQLite table with a unique index (tried first): each insert lands on a random B-tree page, and
/// once the index outgrows a fixed page cache every row costs a page read and write, 10 s a
/// million rows against the 1 s the whole prescan should take.
///
/// Instead an external sort: each token becomes a 128-bit key (two independently salted SipHash
/// digests of its hex, from the standard library's per-process-seeded `Hasher`), keys are
/// collected in a fixed buffer, sorted and de-duplicated, and written as a sorted run to a
/// scratch file; counting merges the runs. A collision between two different tokens would
/// undercount by one with probability about n²/2¹²⁹ (10⁻²³ for a hundred million tokens).
/// Memory: the 8 MiB buffer, or at most `fanIn` 64 KiB read buffers while merging (runs are
/// merged down whenever there are `fanIn` of them). The scratch file is unlinked as soon as it
/// is created, so it disappears with the process, whatever way that ends.
final class DistinctTokenCounter {
    struct Key: Comparable {
        var high: UInt64
        var low: UInt64
        static func < (a: Key, b: Key) -> Bool { a.high != b.high ? a.high < b.high : a.low < b.low }
    }

    /// Keys held before a run is written (16 bytes each).
    let runCapacity: Int
    /// Runs merged at once.
    let fanIn: Int
    private let directory: String
    private var keys: [Key] = []
    private var file: ScratchFile?
    private var runs: [Run] = []

    init(directory: String = NSTemporaryDirectory(), runCapacity: Int = 1 << 19, fanIn: Int = 32) {
        self.directory = directory
        self.runCapacity = runCapacity
        self.fanIn = max(2, fanIn)
        keys.reserveCapacity(runCapacity)
    }

    func insert(_ token: DeviceToken) throws(ScratchFileError) {
        keys.append(Self.key(token.hex))
        if keys.count >= runCapacity { try spill() }
    }

    /// Different tokens inserted so far.
    func count() throws(ScratchFileError) -> Int {
        Self.sortUnique(&keys)
        guard let file, !runs.isEmpty else { return keys.count }
        try spill()
        return try Self.merge(runs, from: file, into: nil)
    }

    /// Writes the buffer as one sorted run; merges the runs into one when there are `fanIn`.
    private func spill() throws(ScratchFileError) {
        Self.sortUnique(&keys)
        if keys.isEmpty { return }
        if self.file == nil { self.file = try ScratchFile(directory: directory) }
        let file = self.file!
        runs.append(try file.append(keys))
        keys.removeAll(keepingCapacity: true)
        if runs.count >= fanIn {
            // A fresh file for the merged run; closing the old one frees its disk space.
            let merged = try ScratchFile(directory: directory)
            let count = try Self.merge(runs, from: file, into: merged)
            runs = [Run(offset: 0, count: count)]
            self.file = merged
        }
    }

    /// K-way merge of sorted, de-duplicated runs: the number of distinct keys, written to `output`
    /// as one run when given.
    private static func merge(_ runs: [Run], from file: ScratchFile, into output: ScratchFile?) throws(ScratchFileError) -> Int {
        var cursors: [RunCursor] = []
        for run in runs { cursors.append(try RunCursor(run, file: file)) }
        // A binary min-heap of cursor indices, ordered by each cursor's current key.
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
        var distinct = 0
        var last: Key?
        var pending: [Key] = []
        pending.reserveCapacity(RunCursor.chunk)
        while let top = heap.first {
            let key = cursors[top].current!
            if key != last {
                distinct += 1
                last = key
                if let output {
                    pending.append(key)
                    if pending.count == RunCursor.chunk { _ = try output.append(pending); pending.removeAll(keepingCapacity: true) }
                }
            }
            try cursors[top].advance()
            if cursors[top].current == nil {
                heap.swapAt(0, heap.count - 1)
                heap.removeLast()
            }
            siftDown(0)
        }
        if let output, !pending.isEmpty { _ = try output.append(pending) }
        return distinct
    }

    private static func sortUnique(_ keys: inout [Key]) {
        guard keys.count > 1 else { return }
        keys.sort()
        var kept = 1
        for i in 1..<keys.count where keys[i] != keys[kept - 1] {
            keys[kept] = keys[i]
            kept += 1
        }
        keys.removeLast(keys.count - kept)
    }

    @inline(__always)
    static func key(_ hex: String) -> Key {
        var hex = hex
        return hex.withUTF8 { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            var a = Hasher()
            a.combine(0x68_65_72_61_6c_64_2d_61 as UInt64)
            a.combine(bytes: raw)
            var b = Hasher()
            b.combine(0x68_65_72_61_6c_64_2d_62 as UInt64)
            b.combine(bytes: raw)
            return Key(high: UInt64(UInt(bitPattern: a.finalize())), low: UInt64(UInt(bitPattern: b.finalize())))
        }
    }
}

/// A sorted run of keys in the scratch file.
struct Run {
    /// In bytes.
    let offset: Int
    let count: Int
}

/// Reads one run in 64 KiB chunks.
struct RunCursor {
    static let chunk = 4096
    private let file: ScratchFile
    /// Byte offset of the first key not yet buffered.
    private var next: Int
    private var remaining: Int
    private var buffer: [DistinctTokenCounter.Key] = []
    private var index = 0
    private(set) var current: DistinctTokenCounter.Key?

    init(_ run: Run, file: ScratchFile) throws(ScratchFileError) {
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
        try file.read(count: n, at: next, into: &buffer)
        next += n * MemoryLayout<DistinctTokenCounter.Key>.stride
        remaining -= n
        index = 0
        current = buffer[0]
    }
}
