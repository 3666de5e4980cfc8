import Crypto
import Foundation
import HeraldCore
import HeraldState

/// Fingerprints of the audience files, so a resumed run knows whether its checkpoint (a line in a
/// file) still means anything. The whole file is hashed: size and mtime alone miss a file
/// rewritten in place with the same length, and a cheap partial hash misses an edit in the middle.
/// SHA-256 of a byte costs little beside parsing the same byte.
enum AudienceFingerprinter {
    static func fingerprints(of files: [AudienceFile]) throws(RunFailure) -> [AudienceFingerprint] {
        var out: [AudienceFingerprint] = []
        for file in files {
            out.append(try fingerprint(file))
        }
        return out
    }

    static func fingerprint(_ file: AudienceFile) throws(RunFailure) -> AudienceFingerprint {
        let fd = open(file.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw RunFailure(.usage, "\(file.name): cannot open audience file: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            throw RunFailure(.usage, "\(file.name): cannot read audience file: \(String(cString: strerror(errno)))")
        }
        var hash = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw RunFailure(.usage, "\(file.name): cannot read audience file: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            buffer.withUnsafeBytes { hash.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        let digest = hash.finalize().map { String(format: "%02x", $0) }.joined()
        let mtime = Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
        return AudienceFingerprint(name: file.name, path: file.path, size: Int64(st.st_size), mtime: mtime, sha256: digest)
    }

    /// `push.broadcast.channels` as one more input: a list edited under an unfinished run is read
    /// again like a changed audience file (channels already sent are not sent again).
    static func listedChannels(of spec: JobSpec) -> AudienceFingerprint? {
        guard let channels = spec.push.broadcast?.channels, !channels.isEmpty else { return nil }
        // A channel moved to another app is another recipient: the app is part of the list.
        let text = Array(channels.map { c in c.app.map { "\($0) \(c.id)" } ?? c.id }.joined(separator: "\n").utf8)
        let digest = SHA256.hash(data: text).map { String(format: "%02x", $0) }.joined()
        return AudienceFingerprint(name: "push.broadcast.channels", path: spec.jobFile, size: Int64(text.count), mtime: 0, sha256: digest)
    }

    /// One line per difference, for the operator: what changed since the run first read its audience.
    static func differences(old: [AudienceFingerprint], new: [AudienceFingerprint]) -> [String] {
        var out: [String] = []
        let oldByName = Dictionary(old.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let newNames = Set(new.map(\.name))
        for f in new {
            guard let before = oldByName[f.name] else { out.append("\(f.name): new file"); continue }
            if !before.sameContent(as: f) {
                out.append("\(f.name): content changed (\(before.size) → \(f.size) bytes)")
            }
        }
        for f in old where !newNames.contains(f.name) { out.append("\(f.name): no longer in the audience") }
        if out.isEmpty && old.map(\.name) != new.map(\.name) { out.append("the files are listed in a different order") }
        return out
    }
}
