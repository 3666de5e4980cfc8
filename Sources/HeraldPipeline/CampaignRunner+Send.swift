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
        /// Connections opened, JWTs signed, retries (reports persist them per run).
        var counters = DeliveryCounters()
    }

    /// Opens the connections and sends (see `send`). `reading`: the audience is still being read
    /// on another thread (`audience.prescan: false`).
    func deliver(state: RunState, headers: HeaderRenderer, routing: AppRouting, credentials: DeliveryTarget.Credentials,
                 reading: SendWhileReading? = nil) throws(RunFailure) -> SendResult {
        let target = try DeliveryTarget(spec: spec, bundleId: headers.bundleId, credentials: credentials)
        defer { target.shutdown() }
        // A broadcast's path names each request's own app (its topic): one destination serves every app.
        let destination: PushDestination = spec.isBroadcast ? .broadcasts : .devices
        let sender = try Self.wrap(.preparing) { () throws(DeliveryError) -> any PushSending in
            if target.pools.count == 1 {
                return try APNsSender(settings: target.settings, connections: target.pools[0].connections, token: target.token, destination: destination)
            }
            return try RoutingSender(pools: target.pools.map {
                RoutingSender.Pool(settings: $0.settings, connections: $0.connections, token: $0.token, destination: destination)
            })
        }
        let routes: SendRoutes
        if spec.isRouted {
            var byApp: [RenderedHeaders] = []
            for app in routing.apps {
                byApp.append(try Self.wrap(.preparing) { () throws(PayloadTemplateError) in
                    try HeaderRenderer(push: spec.push, topic: app.topic, campaign: headers.campaign).shared
                })
            }
            routes = SendRoutes(routing: routing, headers: byApp, poolOfApp: target.poolOfApp, poolNames: target.poolNames)
        } else {
            routes = SendRoutes(single: headers.shared, bundle: spec.apns.topic)
        }
        operations.startSending(state)
        return try send(from: state, routes: routes, sender: sender, reading: reading)
    }

    /// Sends every sendable recipient through the streaming sender (see `SendLoop`), until none is
    /// left (and, sending while reading, the audience is fully read), an abort reason or the
    /// environment guard stops the campaign, or a signal or a failed read stops it.
    func send(from state: RunState, routes: SendRoutes, sender: any PushSending, reading: SendWhileReading? = nil) throws(RunFailure) -> SendResult {
        defer { sender.shutdown() }
        let stop: () -> Bool = { [self] in self.stopRequested.load(ordering: .relaxed) || (reading?.hasFailed ?? false) }
        let gate = try SendGate(spec: spec, state: state, volume: stateVolume, maxAttempts: spec.retry.maxAttempts, logger: logger, isStopping: stop,
                                topics: routes.bundles)
        let operations = self.operations
        let loop = SendLoop(spec: spec, state: state, routes: routes, sender: sender, gate: gate, logger: logger,
                            stopRequested: stop, moreComing: { reading?.isReading ?? false }, onRecorded: { operations.recorded($0) })
        var result = try loop.run()
        if result.status == .finished {
            let gaveUp = try Self.wrap(.sending) { () throws(StateError) in try state.giveUp(olderThan: spec.retry.giveUpAfter) }
            if gaveUp > 0 { logger.warning("\(gaveUp) recipient(s) kept failing for longer than retry.give_up_after and were marked failed (gave_up)") }
            let open = try Self.wrap(.sending) { () throws(StateError) in try state.openCount() }
            if stopRequested.load(ordering: .relaxed) {
                result.status = .incomplete
                result.message = "stopped by signal; \(open) recipient(s) not final yet, rerun to resume"
            } else if let why = try gate.stopMessage(open: open) {
                result.status = .incomplete
                result.message = why
            } else if open > 0 {
                result.status = .incomplete
                result.message = "\(open) recipient(s) still retryable after \(spec.retry.maxAttempts) attempts or retry.max_elapsed "
                    + "(\(spec.retry.maxElapsed)s) in this run; rerun to resume"
            } else {
                result.status = .finished
            }
        }
        return result
    }
}
