import Foundation
import HeraldCore
import HeraldState

/// Counts distinct device tokens in memory that does not grow with the audience: the duplicate
/// count of the audience scan.
///
/// Why not a `Set<DeviceToken>`: its memory grows with the audience, an allocation and the set's
/// overhead per token. Why not a SQLite table with a unique index (tried first): each insert
/// lands on a random B-tree page, and once the index outgrows a fixed page cache every row costs a
/// page read and write, many times what the whole prescan should take (CHANGELOG.md has the
/// figures; the prescan's reading now: docs/benchmarks.md#reading).
///
/// Instead an external sort of token keys (`TokenKey`), equal keys dropped: memory is the
/// sorter's 12 MiB buffer. A 32-byte token is its own key; for other lengths a collision between
/// two different tokens would undercount by one with probability about n²/2¹²⁹.
final class DistinctTokenCounter {
    private let sorter: ExternalSorter

    init(directory: String = NSTemporaryDirectory(), runCapacity: Int = 1 << 18, fanIn: Int = 32) {
        sorter = ExternalSorter(directory: directory, runCapacity: runCapacity, fanIn: fanIn, dropsEqual: true)
    }

    /// `app`: the token's app (an index of the job's apps): a token is counted once per app, as
    /// the run deduplicates.
    func insert(_ token: DeviceToken, app: UInt16 = 0) throws(ScratchFileError) {
        var key = TokenKey(token)
        key.app = app
        try sorter.insert(TokenEntry(key: key, id: 0))
    }

    /// Different (app, token) pairs inserted so far.
    func count() throws(ScratchFileError) -> Int {
        try countByApp().values.reduce(0, +)
    }

    /// Different tokens inserted so far, per app.
    func countByApp() throws(ScratchFileError) -> [UInt16: Int] {
        var n: [UInt16: Int] = [:]
        do {
            try sorter.forEach { n[$0.key.app, default: 0] += 1 }
        } catch let e as ScratchFileError {
            throw e
        } catch {
            throw ScratchFileError(description: "\(error)")
        }
        return n
    }
}
