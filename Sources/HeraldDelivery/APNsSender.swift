import Dispatch
import Foundation
import HeraldCore
import Synchronization

/// A pool of connections, each on its own Dispatch queue (thread), sending one batch at a time.
/// Results come back to the caller's thread, so the caller alone touches the state file.
public final class APNsSender {
    private let connections: [APNsConnection]
    private let queues: [DispatchQueue]
    public let token: ProviderToken?

    public init(settings: ConnectionSettings, connections count: Int, token: ProviderToken?) throws(DeliveryError) {
        var conns: [APNsConnection] = []
        for _ in 0..<max(1, count) { conns.append(try APNsConnection(settings: settings)) }
        connections = conns
        queues = (0..<conns.count).map { DispatchQueue(label: "herald.connection.\($0)") }
        self.token = token
    }

    public var connectionCount: Int { connections.count }

    /// Sends a batch spread over the connections; returns results indexed like `requests`.
    public func send(_ requests: [PushRequest]) throws(DeliveryError) -> [PushResult] {
        let authorization = try token?.current()
        if connections.count == 1 {
            return try connections[0].send(requests, authorization: authorization)
        }
        // Round-robin split keeps every connection equally busy.
        var shares = [[(Int, PushRequest)]](repeating: [], count: connections.count)
        for (i, r) in requests.enumerated() { shares[i % connections.count].append((i, r)) }
        let outputs = Mutex<[Result<[PushResult], DeliveryError>?]>(Array(repeating: nil, count: connections.count))
        let group = DispatchGroup()
        for (c, share) in shares.enumerated() where !share.isEmpty {
            let conn = UncheckedBox(connections[c])
            queues[c].async(group: group) {
                let reqs = share.map(\.1)
                let out: Result<[PushResult], DeliveryError>
                do throws(DeliveryError) {
                    var rs = try conn.value.send(reqs, authorization: authorization)
                    for k in rs.indices { rs[k].index = share[rs[k].index].0 }
                    out = .success(rs)
                } catch {
                    out = .failure(error)
                }
                outputs.withLock { $0[c] = out }
            }
        }
        group.wait()
        var merged: [PushResult] = []
        merged.reserveCapacity(requests.count)
        for o in outputs.withLock({ $0 }) {
            switch o {
            case .success(let rs)?: merged.append(contentsOf: rs)
            case .failure(let e)?: throw e
            case nil: break
            }
        }
        return merged
    }
}

/// A connection handed to its own queue for one batch. Safe because each connection is used by
/// exactly one queue at a time and the caller waits for the group before touching it again.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
