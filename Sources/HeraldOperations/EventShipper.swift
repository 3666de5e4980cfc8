import Foundation
import HeraldCore
import HeraldReports
import HeraldState
import Logging

/// Delivers the outbox's events (`events` in the job) while the campaign sends: one thread per
/// sink reads batches from the state file, hands them to the sink, and only then marks them
/// delivered, so every event reaches every sink at least once, across crashes and reruns. The
/// threads never touch the send loop: a slow or dead receiver leaves events in the outbox on disk
/// (bounded by the campaign's size) and nothing else.
public final class EventShipper: @unchecked Sendable {
    // @unchecked: `figures`, `cursors`, `finishing` and `attemptsWhenDraining` are guarded by `condition`;
    // each sink is used by its own thread only.
    private let store: StateStore
    private let spec: EventsSpec
    private let shard: String?
    private let logger: Logger
    private let sinks: [any EventSink]
    private let condition = NSCondition()
    private var figures: [String: EventSinkSummary] = [:]
    /// Where each sink's thread left off.
    private var cursors: [String: Int64] = [:]
    private var finishing = false
    /// While draining (`finish`), how many failed tries in a row end a sink's drain.
    private var attemptsWhenDraining = 3
    private let group = DispatchGroup()
    /// How often a sink looks for new events when its batch is not full.
    static let poll: TimeInterval = 0.2
    /// The longest wait between two tries of a refused batch.
    static let maxBackoff: TimeInterval = 60

    /// Resolves the job's sinks (the header values from `environment`, the file opened).
    public init(spec: EventsSpec, store: StateStore, shard: String?, environment: [String: String], logger: Logger) throws(EventsError) {
        var sinks: [any EventSink] = []
        if let url = spec.url { sinks.append(try WebhookSink(spec: spec, url: url, environment: environment)) }
        if let file = spec.file { sinks.append(try FileSink(path: file, lockTimeout: Double(spec.timeout))) }
        self.sinks = sinks
        self.spec = spec
        self.store = store
        self.shard = shard
        self.logger = logger
        for sink in sinks { figures[sink.key] = EventSinkSummary(sink: sink.key) }
    }

    /// Every outcome recorded from now on gets its event (`StateStore.captureEvents`), and each
    /// sink starts with what is already waiting for it: a crashed run's events first.
    public func start() throws(StateError) {
        try store.captureEvents()
        for index in sinks.indices {
            group.enter()
            let thread = Thread { [self] in
                ship(sinks[index])
                group.leave()
            }
            thread.name = "herald-events-\(sinks[index].key)"
            thread.start()
        }
    }

    /// Delivers what is left without waiting for batches to fill, until the outbox is empty for
    /// every sink, or a sink has failed `attempts` tries in a row or is stopped; then reports what
    /// each sink did. What is left waits in the outbox for the next run.
    public func finish(attempts: Int = 3) -> [EventSinkSummary] {
        condition.withLock {
            finishing = true
            attemptsWhenDraining = max(1, attempts)
            condition.broadcast()
        }
        group.wait()
        // Counted once every thread is done and the run has recorded its last outcome: a stopped
        // sink's backlog includes what was recorded after it stopped.
        let cursors = condition.withLock { self.cursors }
        for sink in sinks {
            let waiting = (try? store.eventsWaiting(after: cursors[sink.key] ?? 0)) ?? 0
            update(sink) { $0.waiting = waiting }
        }
        return condition.withLock { sinks.compactMap { figures[$0.key] } }
    }

    private func update(_ sink: any EventSink, _ change: (inout EventSinkSummary) -> Void) {
        condition.withLock { change(&figures[sink.key, default: EventSinkSummary(sink: sink.key)]) }
    }

    /// Waits `seconds`, or less if `finish` is called meanwhile; whether the run is finishing.
    private func pause(_ seconds: TimeInterval) -> Bool {
        condition.withLock {
            let until = Date().addingTimeInterval(seconds)
            while !finishing && condition.wait(until: until) {}
            return finishing
        }
    }

    private var draining: (Bool, Int) { condition.withLock { (finishing, attemptsWhenDraining) } }

    private func ship(_ sink: any EventSink) {
        let keys = sinks.map(\.key)
        var cursor: Int64 = 0
        var failuresInARow = 0
        var backoff: TimeInterval = 1
        var partialSince: Date?
        var lastFailure: String?
        var loaded = false
        while true {
            let (finishing, drainAttempts) = draining
            if finishing && failuresInARow >= drainAttempts { break }
            do {
                if !loaded { cursor = try store.eventCursor(sink: sink.key); loaded = true }
                let waiting = try store.eventsWaiting(after: cursor, limit: spec.batch)
                if waiting == 0 {
                    if finishing { break }
                    partialSince = nil
                    _ = pause(Self.poll)
                    continue
                }
                if waiting < spec.batch && !finishing {
                    // A batch that is not full goes once its first event has waited `flush`.
                    let since = partialSince ?? Date()
                    partialSince = since
                    let left = Double(spec.flush) - Date().timeIntervalSince(since)
                    if left > 0 { _ = pause(min(Self.poll, left)); continue }
                }
                let events = try store.events(after: cursor, limit: spec.batch)
                guard let last = events.last else { continue }
                var body: [UInt8] = []
                body.reserveCapacity(events.count * 400)
                for e in events { DeliveryEvent.line(e, shard: shard, into: &body) }
                switch sink.deliver(body) {
                case .delivered:
                    try store.markEventsDelivered(sink: sink.key, through: last.id, count: events.count, sinks: keys)
                    cursor = last.id
                    update(sink) { $0.delivered += events.count }
                    if lastFailure != nil { logger.notice("\(sink.label) takes events again") }
                    lastFailure = nil
                    failuresInARow = 0
                    backoff = 1
                    partialSince = nil
                case .retry(let why):
                    update(sink) { $0.failedAttempts += 1 }
                    failuresInARow += 1
                    // One warning per kind of failure, not one per try: a receiver down for an
                    // hour would otherwise fill the log.
                    if why != lastFailure {
                        logger.warning("\(sink.label): \(why); events wait in the outbox and are tried again (sending is not affected)")
                    }
                    lastFailure = why
                    let wait = finishing ? min(backoff, 1) : backoff
                    backoff = min(backoff * 2, Self.maxBackoff)
                    _ = pause(wait)
                case .stop(let why):
                    update(sink) { $0.failedAttempts += 1; $0.error = why }
                    logger.error("\(sink.label): \(why); no more events go there in this run (the campaign goes on; they wait in the outbox for the next run)")
                    return finishWaiting(sink, cursor: cursor)
                }
            } catch {
                // The state file could not be read or written (a full disk): the events stay in the outbox.
                update(sink) { $0.failedAttempts += 1 }
                failuresInARow += 1
                let why = "\(error)"
                if why != lastFailure { logger.warning("\(sink.label): \(why); tried again") }
                lastFailure = why
                _ = pause(finishing ? 1 : backoff)
                backoff = min(backoff * 2, Self.maxBackoff)
            }
        }
        finishWaiting(sink, cursor: cursor)
    }

    private func finishWaiting(_ sink: any EventSink, cursor: Int64) {
        condition.withLock { cursors[sink.key] = cursor }
    }
}
