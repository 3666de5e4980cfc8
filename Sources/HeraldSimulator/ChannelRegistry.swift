import Foundation
import HeraldCore

/// The simulator's broadcast channels, in memory, per bundle id: what the management port
/// creates, lists and deletes, and what the broadcast endpoint checks a send against. Apple:
/// "Channel IDs generate randomly when you create them", a deleted id is never reused, and an
/// app keeps at most 10,000 channels per environment
/// (https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns).
public final class ChannelRegistry: Sendable {
    /// `message-storage-policy`: 0 No Message Stored, 1 Most Recent Message Stored.
    public enum StoragePolicy: Int, Sendable { case noMessageStored = 0, mostRecentMessageStored = 1 }

    private struct State {
        var channels: [String: [String: StoragePolicy]] = [:]
        /// In creation order, per bundle id, for listings that read like Apple's.
        var order: [String: [String]] = [:]
        /// Channels created so far: the next id's index.
        var created: UInt64 = 0
    }
    private let state = Locked(State())
    /// Channels per app before `CannotCreateChannelConfig`.
    public let limit: Int
    /// The faults' seed (`--seed`): channel ids, and so the faults keyed by them, are the same
    /// from one simulator to the next.
    public let seed: UInt64

    public init(limit: Int = 10_000, seed: UInt64 = 0) { self.limit = limit; self.seed = seed }

    /// A new channel's id (base64 of 16 bytes that look random, drawn from the seed and the
    /// channel's number; never one given before), or nil at the limit.
    public func create(bundleId: String, policy: StoragePolicy) -> String? {
        state.withLock { s in
            guard s.channels[bundleId, default: [:]].count < limit else { return nil }
            var bytes: [UInt8] = []
            for half in UInt64(0)...1 {
                withUnsafeBytes(of: FaultDice.hash(seed: seed, key: "channel", index: s.created &* 2 &+ half).littleEndian) { bytes += $0 }
            }
            s.created += 1
            let id = Data(bytes).base64EncodedString()
            s.channels[bundleId, default: [:]][id] = policy
            s.order[bundleId, default: []].append(id)
            return id
        }
    }

    public func policy(bundleId: String, channel: String) -> StoragePolicy? {
        state.withLock { $0.channels[bundleId]?[channel] }
    }

    /// The channel's policy, registering it (Most Recent Message Stored) if it is unknown: the
    /// in-process simulator of an `endpoint: simulator` job, which has no management port to
    /// create channels on, takes the job's channels as they come.
    func adopt(bundleId: String, channel: String) -> StoragePolicy {
        state.withLock { s in
            if let known = s.channels[bundleId]?[channel] { return known }
            s.channels[bundleId, default: [:]][channel] = .mostRecentMessageStored
            s.order[bundleId, default: []].append(channel)
            return .mostRecentMessageStored
        }
    }

    /// Whether the channel existed.
    public func delete(bundleId: String, channel: String) -> Bool {
        state.withLock { s in
            guard s.channels[bundleId]?.removeValue(forKey: channel) != nil else { return false }
            s.order[bundleId]?.removeAll { $0 == channel }
            return true
        }
    }

    public func list(bundleId: String) -> [String] { state.withLock { $0.order[bundleId] ?? [] } }

    /// Apple: "a base64-encoded string"; its length is not published, so the simulator takes up to 128 characters.
    static func isChannelId(_ text: String) -> Bool {
        text.utf8.count <= 128 && BroadcastChannelId.isWellFormed(text)
    }
}
