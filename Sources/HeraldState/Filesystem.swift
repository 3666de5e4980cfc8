import CStatfs
import Foundation
import HeraldTestHooks

/// The filesystem a path is on, as statfs(2) reports it (`f_type`), and whether it is one of the
/// network or cluster filesystems on which SQLite's WAL mode is unsafe: "All processes using a
/// database must be on the same host computer; WAL does not work over a network filesystem"
/// (https://www.sqlite.org/wal.html). The WAL index is a shared-memory file (`-shm`) that every
/// connection maps; another host's mapping of it is not kept coherent, and some of these
/// filesystems cannot map it at all.
public struct Filesystem: Sendable, Equatable, CustomStringConvertible {
    /// statfs(2)'s `f_type`.
    public let magic: UInt32

    public init(magic: UInt32) { self.magic = magic }

    /// The network filesystems' magic numbers (linux/magic.h, statfs(2), and each filesystem's
    /// own source for those out of the kernel tree). FUSE counts as one: sshfs, s3fs, gcsfuse,
    /// GlusterFS, ceph-fuse, JuiceFS and virtiofs all report FUSE's number, and statfs cannot
    /// tell them from a local FUSE filesystem; whether shared mappings and POSIX locks work is the
    /// FUSE daemon's choice, and the WAL index needs both.
    static let network: [UInt32: String] = [
        0x6969: "nfs", 0x517B: "smb", 0xFE53_4D42: "smb2", 0xFF53_4D42: "cifs", 0x00C3_6400: "ceph",
        0x6573_5546: "fuse", 0x5346_414F: "afs", 0x6B41_4653: "kafs", 0x7375_7245: "coda", 0x0116_1970: "gfs2",
        0x7461_636F: "ocfs2", 0x0BD0_0BD0: "lustre", 0x0102_1997: "9p", 0x564C: "ncp", 0x2003_0528: "orangefs",
        0x4750_4653: "gpfs", 0x1983_0326: "beegfs",
    ]

    /// The network filesystem's name, or nil for any other filesystem.
    public var networkName: String? { Self.network[magic] }
    public var isNetwork: Bool { networkName != nil }

    public var description: String {
        let hex = "0x" + String(magic, radix: 16, uppercase: true)
        return networkName.map { "\($0) (f_type \(hex))" } ?? "f_type \(hex)"
    }

    /// The filesystem of `path`, or of its nearest existing ancestor when it does not exist yet
    /// (a state directory herald is about to create lands on its parent's filesystem).
    /// `HERALD_TEST_FILESYSTEM` stands in for statfs in tests (HeraldTestHooks).
    public static func of(path: String) throws(StateError) -> Filesystem {
        var current = URL(fileURLWithPath: path).standardizedFileURL.path
        if let magic = FilesystemStandIn.magic(of: current) { return Filesystem(magic: magic) }
        while true {
            var type: UInt = 0
            if herald_statfs_type(current, &type) == 0 { return Filesystem(magic: UInt32(truncatingIfNeeded: type)) }
            let code = errno
            guard code == ENOENT, current != "/" else {
                throw StateError(path: current, message: "statfs: \(String(cString: strerror(code)))", errno: code)
            }
            current = (current as NSString).deletingLastPathComponent
        }
    }
}
