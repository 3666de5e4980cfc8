import Foundation
import HeraldCore

/// The token keys of a first pass's staged rows, taken while `RunState.ingest` stages them, so that
/// `markIngestComplete` sorts them for deduplication without reading a million tokens back out of
/// the state file (that read was about a tenth of the time of ingesting an audience).
///
/// Only ever a shortcut: the keys live in this process (and its scratch file) and vanish with it.
/// A resumed ingest, whose earlier rows were staged by a process that died, gets none
/// (`RunState.firstPassKeys` returns nil) and settles by reading the tokens back, as does a pass
/// whose keys could not all be kept (`isComplete` false).
public final class FirstPassKeys: @unchecked Sendable {
    // @unchecked: used by one thread at a time, the one running the ingest.
    let sorter: ExternalSorter
    /// The batch being staged: its keys join the sorter only once its transaction has committed.
    var staged: [TokenEntry] = []
    /// False once a batch's keys may be missing (its commit failed, or the scratch file did).
    private(set) var isComplete = true

    init(scratchDirectory: String) {
        sorter = ExternalSorter(directory: scratchDirectory)
    }

    /// The staged batch committed: its keys count.
    func keepStaged() {
        defer { staged.removeAll(keepingCapacity: true) }
        guard isComplete else { return }
        do {
            for entry in staged { try sorter.insert(entry) }
        } catch {
            isComplete = false
        }
    }

    /// The staged batch did not commit.
    func dropStaged() {
        staged.removeAll(keepingCapacity: true)
        isComplete = false
    }
}

extension RunState {
    /// Keys to collect while staging this run's first pass, or nil when the pass already has
    /// staged rows (a resumed ingest: deduplication reads their tokens back instead).
    public func firstPassKeys() throws(StateError) -> FirstPassKeys? {
        let staged = try read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM audience_row WHERE run = ? AND pass = 1)", arguments: [id]) ?? true
        }
        return staged ? nil : FirstPassKeys(scratchDirectory: (store.path as NSString).deletingLastPathComponent)
    }
}
