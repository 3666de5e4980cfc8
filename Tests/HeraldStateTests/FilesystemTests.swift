import Foundation
import HeraldCore
@testable import HeraldState
import HeraldTestSupport
import Testing

@Suite struct FilesystemTests {
    /// coreutils' `stat -f -c %t`: the same statfs(2) `f_type`, read by another program.
    private func statType(_ path: String) throws -> UInt32 {
        let result = try ProcessRunner.run("/usr/bin/env", ["stat", "-f", "-c", "%t", path])
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(UInt32(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines), radix: 16))
    }

    @Test func localDirectoriesAreWhatStatfsSaysAndNotNetwork() throws {
        let dir = TemporaryDirectory("fs")
        for path in [dir.path, "/dev/shm"] where FileManager.default.fileExists(atPath: path) {
            let fs = try Filesystem.of(path: path)
            #expect(fs.magic == (try statType(path)), "\(path)")
            #expect(!fs.isNetwork, "\(path) is \(fs)")
        }
        // tmpfs, the kernel's TMPFS_MAGIC (linux/magic.h), where /dev/shm is one.
        if try statType("/dev/shm") == 0x0102_1994 { #expect(try Filesystem.of(path: "/dev/shm").magic == 0x0102_1994) }
    }

    @Test func aDirectoryNotYetMadeIsOnItsNearestParentsFilesystem() throws {
        let dir = TemporaryDirectory("fs")
        #expect(try Filesystem.of(path: dir.file("state/a/b")) == Filesystem.of(path: dir.path))
    }

    @Test func networkAndClusterFilesystemsAreKnownByTheirMagicNumbers() {
        let network: [(UInt32, String)] = [
            (0x6969, "nfs"), (0x517B, "smb"), (0xFE53_4D42, "smb2"), (0xFF53_4D42, "cifs"), (0x00C3_6400, "ceph"),
            (0x6573_5546, "fuse"), (0x7375_7245, "coda"), (0x0116_1970, "gfs2"), (0x7461_636F, "ocfs2"),
            (0x0BD0_0BD0, "lustre"), (0x0102_1997, "9p"), (0x5346_414F, "afs"),
        ]
        for (magic, name) in network {
            #expect(Filesystem(magic: magic).networkName == name)
            #expect(Filesystem(magic: magic).description == "\(name) (f_type 0x\(String(magic, radix: 16, uppercase: true)))")
        }
        // ext4, xfs, btrfs, tmpfs, overlayfs (a container's root), zfs: local.
        for magic: UInt32 in [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994, 0x794C_7630, 0x2FC1_2FC1] {
            #expect(!Filesystem(magic: magic).isNetwork, "0x\(String(magic, radix: 16))")
        }
    }

    @Test func aStateDirectoryOnANetworkFilesystemIsRefusedUnlessTheJobAcceptsIt() throws {
        // The volume decision itself, given a filesystem (the end-to-end tests give one through
        // HERALD_TEST_FILESYSTEM): local is always local, whatever the job says.
        let dir = TemporaryDirectory("fs")
        var job = JobSpec(jobFile: "job.yaml", campaign: "c", audience: AudienceSpec(files: []),
                          apns: APNsSpec(endpoint: .simulator, topic: "com.example.app", auth: nil),
                          push: PushSpec(type: .alert, priority: 10, template: .object([])), throttle: ThrottleSpec(), retry: RetrySpec(),
                          statePath: dir.file("state/c.sqlite"), reports: ReportsSpec(dir: dir.file("reports")))
        #expect(try StateVolume(job: job) == .local)
        job.stateNetworkFilesystem = .exclusive
        #expect(try StateVolume(job: job) == .local)
    }
}
