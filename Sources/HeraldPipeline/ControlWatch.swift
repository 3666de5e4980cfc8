import Dispatch
import Foundation
import HeraldCore
import HeraldState

/// Watches the campaign's state file for an operator's hold (`herald pause`, `herald cancel`)
/// while a run goes on, and stops the run as a signal would once one is committed.
///
/// It reads on the run's own connection (a one-row table, a few times a second), so it works
/// whatever the state volume, including a network one the run holds exclusively. The send
/// loop's checkpoint refuses to claim once a hold is committed (RunState.commit), so nothing new
/// leaves after the command's transaction even before the watcher has noticed; the watcher is what
/// wakes a run that is waiting (for a rate, a schedule window, a frequency-cap slot, a retry) and
/// ends it within a second.
final class ControlWatch: @unchecked Sendable {
    /// How often the state file is read: four times a second keeps the stop within a second.
    static let interval: TimeInterval = 0.25

    private let store: StateStore
    private let seen = Locked<CampaignControl?>(nil)
    private let timer: DispatchSourceTimer

    /// Starts watching; `onHold` runs once, on a background queue, when a hold is first seen.
    init(store: StateStore, onHold: @escaping (CampaignControl) -> Void) {
        self.store = store
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "herald.control-watch"))
        timer.schedule(deadline: .now() + Self.interval, repeating: Self.interval, leeway: .milliseconds(20))
        timer.setEventHandler { [weak self] in
            guard let self, self.hold == nil, let control = try? self.store.control() else { return }
            self.seen.withLock { $0 = control }
            onHold(control)
        }
        timer.resume()
    }

    /// The hold seen, if any.
    var hold: CampaignControl? { seen.withLock { $0 } }

    /// Reads the file once more now (at the end of the send stage: a hold committed in the last
    /// quarter second still counts) and stops watching.
    func finish() -> CampaignControl? {
        timer.cancel()
        if hold == nil, let control = try? store.control() { seen.withLock { $0 = control } }
        return hold
    }

    deinit { timer.cancel() }
}
