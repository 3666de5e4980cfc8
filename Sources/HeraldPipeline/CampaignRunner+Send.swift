import Foundation
import HeraldCore
import HeraldDelivery
import HeraldPayload
import HeraldState

extension CampaignRunner {
    struct SendResult {
        var status: ExitStatus
        var message: String?
        var sent: Int
    }

    /// The in-flight window: how many recipients may be `inflight` at once (connections × streams).
    /// After a crash at most this many have an unknown outcome and are resent with the same apns-id.
    var window: Int { spec.apns.connections * spec.apns.streamsPerConnection }

    /// Claims pending recipients (committed as inflight first), sends them, commits their answers;
    /// until none is left, a fatal answer aborts, or a signal stops it.
    func send(from state: RunState, headers: HeaderRenderer, sender: APNsSender) throws(RunFailure) -> SendResult {
        let maxAttempts = spec.retry.maxAttempts
        try Self.wrap(.usage) { () throws(StateError) in try state.resetRunAttempts() }
        let shared = headers.shared
        let gate = try SendGate(spec: spec, state: state, maxAttempts: maxAttempts, logger: logger) { [unowned self] in self.stopRequested.load(ordering: .relaxed) }
        defer { deliveryCounters.throttleDeferrals += gate.counters.throttleDeferrals }
        var sent = 0
        let batchSize = gate.batchSize(window: window)

        while !stopRequested.load(ordering: .relaxed) && !gate.deadlinePassed {
            let batch = try Self.wrap(.incomplete) { () throws(StateError) in try state.claim(limit: batchSize, maxAttempts: maxAttempts) }
            if batch.isEmpty {
                let next = try Self.wrap(.incomplete) { () throws(StateError) in try state.nextRetryTime(maxAttempts: maxAttempts) }
                guard let next else { break }
                let wait = next.timeIntervalSinceNow
                if wait > 0 { Thread.sleep(forTimeInterval: min(wait, 1.0)) }
                continue
            }
            let claimed = try gate.admit(batch).send
            if claimed.isEmpty { continue }
            let now = Int(Date().timeIntervalSince1970)
            let requests = claimed.map { c in
                let own = c.headers
                return PushRequest(token: c.token, payload: c.payload, apnsId: c.apnsId, topic: shared.topic, pushType: shared.pushType,
                                   priority: own?.priority ?? shared.priority, collapseId: own.map { $0.collapseId } ?? shared.collapseId,
                                   expiration: gate.expiration(own?.expiration ?? shared.expiration, sentAt: now))
            }
            let results: [PushResult]
            do {
                results = try sender.send(requests)
            } catch {
                // The batch never left (or we cannot tell): put it back, keep the apns-ids.
                try? state.release(claimed.map(\.seq))
                throw RunFailure(.incomplete, "sending failed: \(error.description); rerun to resume")
            }
            let decision = OutcomeDecision.decide(results: results, claimed: claimed, maxAttempts: maxAttempts)
            try Self.wrap(.incomplete) { () throws(StateError) in try state.record(decision.outcomes) }
            deliveryCounters.retries += decision.outcomes.reduce(0) { $0 + ($1.status == .retry ? 1 : 0) }
            operations.recorded(decision.outcomes)
            CrashPoint.send.reached()
            sent += decision.sent
            if decision.refreshToken { sender.token?.invalidate() }
            if let abort = decision.abort {
                try Self.wrap(.incomplete) { () throws(StateError) in try state.release(decision.released) }
                return SendResult(status: .aborted, message: "aborted: APNs answered \(abort.status) \(abort.reason) (\(abort.meaning)); "
                                  + "\(decision.released.count) recipient(s) put back to pending. Fix the configuration and rerun.", sent: sent)
            }
        }
        let gaveUp = try Self.wrap(.incomplete) { () throws(StateError) in try state.giveUp(olderThan: spec.retry.giveUpAfter) }
        if gaveUp > 0 { logger.warning("\(gaveUp) recipient(s) kept failing for longer than retry.give_up_after and were marked failed (gave_up)") }
        let counts = try Self.wrap(.incomplete) { () throws(StateError) in try state.statusCounts() }
        let open = (counts[.pending] ?? 0) + (counts[.inflight] ?? 0) + (counts[.retry] ?? 0)
        if stopRequested.load(ordering: .relaxed) {
            return SendResult(status: .incomplete, message: "stopped by signal; \(open) recipient(s) not final yet, rerun to resume", sent: sent)
        }
        if let why = try gate.stopMessage(open: open) { return SendResult(status: .incomplete, message: why, sent: sent) }
        if open > 0 {
            return SendResult(status: .incomplete, message: "\(open) recipient(s) still retryable after \(spec.retry.maxAttempts) attempts; rerun to resume", sent: sent)
        }
        return SendResult(status: .finished, message: nil, sent: sent)
    }
}
