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

    func insert(_ token: DeviceToken) throws(ScratchFileError) {
        try sorter.insert(TokenEntry(key: TokenKey(token), id: 0))
    }

    /// Different tokens inserted so far.
    func count() throws(ScratchFileError) -> Int {
        var n = 0
        do {
            try sorter.forEach { _ in n += 1 }
        } catch let e as ScratchFileError {
            throw e
        } catch {
            throw ScratchFileError(description: "\(error)")
        }
        return n
    }
}
