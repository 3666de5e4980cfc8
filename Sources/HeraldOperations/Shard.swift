import Crypto
import Foundation
import HeraldCore

/// `--shard k/n`: this process sends only the recipients of shard k out of n, so n machines (a
/// Kubernetes Indexed Job, n cron hosts) share one audience without coordinating. Every shard reads
/// the whole audience (reading runs at zcat speed; sending is the slow part) and keeps its own state
/// file, lock and reports directory, so shards never contend and each resumes on its own.
///
/// A token's shard is the first 8 bytes of SHA-256 of its normalized form (the lower-case hex text
/// that deliveries.csv shows), read big-endian, modulo n. A hash, not the token itself: tokens are
/// opaque, and their leading bytes need not be evenly spread. Reproducible anywhere:
/// `int.from_bytes(hashlib.sha256(token.encode()).digest()[:8], "big") % n`.
///
/// Rows: a row whose token normalizes belongs to its token's shard, with the token's duplicates and
/// its render errors (missing_field, bad_field_value, payload_too_large), so a recipient's rows are
/// all in one shard's reports. A row the reader rejects (invalid or missing token, wrong field
/// count, bad UTF-8, malformed JSON) has no usable token: it belongs to shard (line mod n), so each
/// is reported once, by one shard, and invalid rows spread evenly, keeping a percentage
/// `max_invalid_rows` meaning the same per shard as for the whole audience.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    /// 0-based, like Kubernetes' JOB_COMPLETION_INDEX.
    public let index: Int
    public let count: Int

    public init(index: Int, count: Int) throws(ShardError) {
        guard count >= 1 else { throw .invalid("the shard count must be at least 1, not \(count)") }
        guard index >= 0, index < count else {
            throw .invalid("shard \(index) does not exist among \(count) shards (k is 0-based: 0 to \(count - 1))")
        }
        self.index = index
        self.count = count
    }

    /// Parses `k/n`.
    public init(text: String) throws(ShardError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let k = Int(parts[0]), let n = Int(parts[1]) else {
            throw .invalid("--shard must be k/n (for example 0/4, k 0-based), not \"\(text)\"")
        }
        try self.init(index: k, count: n)
    }

    /// The shard to run: `--shard` when given; else `JOB_COMPLETION_INDEX` with `HERALD_SHARD_COUNT`;
    /// nil when neither is set. One of the two variables without the other is an error, not an
    /// unsharded run: in an Indexed Job that forgot HERALD_SHARD_COUNT every pod would send the whole
    /// campaign.
    public static func resolve(option: String?, environment: [String: String]) throws(ShardError) -> Shard? {
        if let option { return try Shard(text: option) }
        let index = environment["JOB_COMPLETION_INDEX"]
        let count = environment["HERALD_SHARD_COUNT"]
        switch (index, count) {
        case (nil, nil): return nil
        case (let i?, let n?):
            guard let k = Int(i) else { throw .invalid("JOB_COMPLETION_INDEX must be a number, not \"\(i)\"") }
            guard let c = Int(n) else { throw .invalid("HERALD_SHARD_COUNT must be a number, not \"\(n)\"") }
            return try Shard(index: k, count: c)
        case (nil, _?):
            throw .invalid("HERALD_SHARD_COUNT is set but JOB_COMPLETION_INDEX is not: pass --shard k/n")
        case (_?, nil):
            throw .invalid("JOB_COMPLETION_INDEX is set but HERALD_SHARD_COUNT is not: set it to the Job's completions "
                           + "(or pass --shard k/n), otherwise every pod would send the whole campaign")
        }
    }

    /// `-shard-k-of-n`, appended to the state file's name (before `.sqlite`) and the reports directory.
    /// `herald report --merge` finds shard reports by this suffix: keep it as it is.
    public var suffix: String { "-shard-\(index)-of-\(count)" }

    public var description: String { "\(index)/\(count)" }

    /// The token's shard among `count`.
    public static func of(_ token: DeviceToken, count: Int) -> Int {
        let digest = SHA256.hash(data: Array(token.hex.utf8))
        var value: UInt64 = 0
        for byte in digest.prefix(8) { value = value << 8 | UInt64(byte) }
        return Int(value % UInt64(count))
    }

    public func owns(_ token: DeviceToken) -> Bool { Self.of(token, count: count) == index }

    /// Whether a row with no usable token (rejected by the reader) is this shard's to report.
    public func ownsRejectedRow(line: Int) -> Bool { line % count == index }

    /// The job with this shard's own state file and reports directory, so each shard has its own
    /// lock, checkpoints and reports (`state/x.sqlite` → `state/x-shard-0-of-4.sqlite`,
    /// `reports/{campaign}` → `reports/{campaign}-shard-0-of-4`).
    public func apply(to spec: JobSpec) -> JobSpec {
        var spec = spec
        spec.statePath = Self.insert(suffix, beforeExtensionOf: spec.statePath)
        var dir = spec.reports.dir
        while dir.count > 1 && dir.hasSuffix("/") { dir.removeLast() }
        spec.reports.dir = dir + suffix
        return spec
    }

    /// State files of the same campaign kept under another shard layout (unsharded, or another n).
    /// Each n partitions tokens differently, so a run under a new layout would send again what the
    /// old layout's runs sent: `herald run` refuses to start a layout while another one has state.
    public static func otherLayouts(of statePath: String, than shard: Shard?) -> [String] {
        let dir = (statePath as NSString).deletingLastPathComponent
        let unsharded = (statePath as NSString).lastPathComponent
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir.isEmpty ? "." : dir) else { return [] }
        var found: [String] = []
        for name in names.sorted() {
            if name == unsharded {
                if shard != nil { found.append(name) }
            } else if let count = shardCount(inName: name, unsharded: unsharded), count != shard?.count {
                found.append(name)
            }
        }
        return found.map { dir.isEmpty ? $0 : dir + "/" + $0 }
    }

    /// n when `name` is `unsharded` with a `-shard-k-of-n` suffix.
    static func shardCount(inName name: String, unsharded: String) -> Int? {
        let marked = insert("\u{0}", beforeExtensionOf: unsharded)
        let parts = marked.split(separator: "\u{0}", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, name.hasPrefix(parts[0] + "-shard-"), name.hasSuffix(parts[1]) else { return nil }
        let middle = name.dropFirst(parts[0].count + "-shard-".count).dropLast(parts[1].count)
        let kn = middle.split(separator: "-", omittingEmptySubsequences: false)
        guard kn.count == 3, kn[1] == "of", Int(kn[0]) != nil, let n = Int(kn[2]) else { return nil }
        return n
    }

    static func insert(_ suffix: String, beforeExtensionOf path: String) -> String {
        let nameStart = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        if let dot = path[nameStart...].lastIndex(of: "."), dot > nameStart {
            return String(path[..<dot]) + suffix + String(path[dot...])
        }
        return path + suffix
    }
}

/// A bad `--shard` or shard environment variable: exit 2.
public enum ShardError: Error, CustomStringConvertible {
    case invalid(String)
    public var description: String {
        switch self { case .invalid(let m): return m }
    }
}
