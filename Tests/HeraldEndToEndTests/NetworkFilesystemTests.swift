import Foundation
import HeraldTestSupport
import Testing

private let bindfs = ["/usr/bin/bindfs", "/usr/local/bin/bindfs"].first { FileManager.default.isExecutableFile(atPath: $0) }
private let fuse = Prerequisite(bindfs != nil && geteuid() == 0 && FileManager.default.fileExists(atPath: "/dev/fuse"),
                                "root, /dev/fuse and bindfs (apt-get install -y bindfs) for a real FUSE mount")

/// A state directory on a network filesystem (`state.network_filesystem`), on the built binary
/// against the simulator. No NFS can be mounted here: `HERALD_TEST_FILESYSTEM` makes herald take
/// the test's state directory as on NFS (f_type 0x6969), and SQLite's locks and journals are
/// those of the local disk under it. A FUSE filesystem can be (bindfs, Debian package `bindfs`,
/// which `make test` installs), and is one herald counts as a network filesystem.
@Suite(.serialized) struct NetworkFilesystemTests {
    let dir = TemporaryDirectory("e2e-netfs")

    /// Runs that take the state directory for one on NFS.
    var onNFS: Herald { Herald(environment: ["HERALD_TEST_FILESYSTEM": dir.file("state") + "=0x6969"]) }
    /// Runs that take it for what it is.
    let herald = Herald()

    func job(_ name: String, exclusive: Bool) throws -> JobFile {
        try TestJob(name) {
            $0.audience.files = ["../data/audience.csv"]
            $0.apns.streamsPerConnection = 20
            $0.push.template = "{ aps: { alert: \"\(name)\" } }"
            $0.throttle.frequencyCap = "{ category: marketing, limits: [{ max: 5, per: 24h }] }"
            $0.state.file = "../state/\(name).sqlite"
            if exclusive { $0.state.networkFilesystem = "exclusive" }
        }.write(in: dir)
    }

    func writeAudience() throws {
        try dir.write("data/audience.csv", "token\n" + (1...300).map { String(format: "%064x", $0) }.joined(separator: "\n") + "\n")
    }

    /// bindfs mirroring `source` at `path`: a real FUSE filesystem (f_type 0x65735546), unmounted when the value goes away.
    /// In the foreground (`-f`): a daemon would keep the test's output pipes open.
    final class FUSEMount {
        let path: String
        let daemon: BackgroundProcess
        init(_ source: String, at path: String) throws {
            self.path = path
            for d in [source, path] { try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true) }
            daemon = try BackgroundProcess(bindfs!, ["-f", source, path])
            let mounted = waitUntil(timeout: 10) {
                ((try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? "").contains(" \(path) fuse")
            }
            guard mounted else { throw TestSupportError("bindfs did not mount \(source) at \(path)") }
        }
        deinit {
            _ = try? ProcessRunner.run("/bin/umount", [path])
            daemon.process.waitUntilExit()
        }
    }

    func stateFiles() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: dir.file("state")).sorted() }

    @Test func aStateDirectoryOnANetworkFilesystemIsRefusedBeforeAnythingIsWrittenOrSent() throws {
        try writeAudience()
        let path = try job("refused", exclusive: false)
        let r = try onNFS.run(path)
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("state directory \(dir.file("state")) is on a network filesystem (nfs (f_type 0x6969))"), "\(r.stderr)")
        #expect(r.stderr.contains("set `state: { network_filesystem: exclusive }` in \(path.path)"), "\(r.stderr)")
        #expect(r.stderr.contains("docs/operations.md#state-on-a-network-filesystem"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("state")), "not even the lock file was made")
        #expect(!FileManager.default.fileExists(atPath: dir.file("out/refused.ndjson")), "nothing was sent")

        // The same job on the same disk, not taken for NFS, runs: it was the filesystem that was refused.
        let local = try herald.run(path)
        #expect(local.status == 0, "\(local.stdout)\(local.stderr)")
    }

    @Test func anExclusiveRunHoldsItsStateFileWithoutSharedMemoryWhileOtherCampaignsShareTheLedger() throws {
        try writeAudience()
        let held = try job("held", exclusive: true), other = try job("other", exclusive: true)
        // The run stops (lock and state file held) right after its first batch of answers is committed.
        let first = try onNFS.start(["run", held.path], watch: .stderr, environment: ["HERALD_TEST_STALL_AT": "send:1"])
        _ = try first.waitForLine(prefix: "herald-test: stalled")
        let whileHeld = try stateFiles()
        #expect(whileHeld.allSatisfy { !$0.hasSuffix("-shm") }, "\(whileHeld)")

        // Another process cannot open the state file while the run holds it.
        let status = try onNFS(["status", held.path])
        #expect(status.status == 2, "\(status.stdout)\(status.stderr)")
        #expect(status.stderr.contains("\(dir.file("state/held.sqlite")): another process has this file open"), "\(status.stderr)")

        // Another campaign of the directory takes its turns at herald-shared.sqlite (the cap ledger,
        // which the held run has open) and finishes meanwhile: no -shm there either.
        let second = try onNFS.run(other)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        let besideOther = try stateFiles()
        #expect(besideOther.allSatisfy { !$0.hasSuffix("-shm") }, "\(besideOther)")

        first.kill9()
        let rerun = try onNFS.run(held)
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        let sent = try RequestLog.read(dir.file("out/held.ndjson"))
        #expect(sent.count == 300, "every recipient reached once the killed run was resumed")
        // Closed cleanly: the WAL left by the killed run was recovered and removed, and nothing else is left beside the files.
        #expect(try stateFiles() == ["held.sqlite", "held.sqlite.lock", "herald-shared.sqlite", "other.sqlite", "other.sqlite.lock"])
        let done = try onNFS(["status", held.path])
        #expect(done.status == 0 && done.stdout.contains("300 sent"), "\(done.stdout)\(done.stderr)")
    }

    @Test(.enabled(if: fuse.runs, fuse.skipReason))
    func aRealFUSEMountIsRefusedAndTakesAnExclusiveRunToTheEndThroughAKill() throws {
        try fuse.require()
        try writeAudience()
        let mount = try FUSEMount(dir.file("backing"), at: dir.file("state"))
        let refused = try herald.run(try job("fuse", exclusive: false))
        #expect(refused.status == 2, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("state directory \(dir.file("state")) is on a network filesystem (fuse (f_type 0x65735546))"),
                "\(refused.stderr)")

        let path = try job("fuse", exclusive: true)
        // While a run holds the files (stopped after its first batch of answers): a WAL, and no -shm.
        let held = try herald.start(["run", path.path], watch: .stderr, environment: ["HERALD_TEST_STALL_AT": "send:1"])
        _ = try held.waitForLine(prefix: "herald-test: stalled")
        let whileHeld = try FileManager.default.contentsOfDirectory(atPath: dir.file("backing"))
        #expect(whileHeld.contains("fuse.sqlite-wal") && whileHeld.allSatisfy { !$0.hasSuffix("-shm") }, "\(whileHeld)")
        held.kill9()
        let run = try herald.run(path)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(try RequestLog.read(dir.file("out/fuse.ndjson")).count == 300)
        // What reached the disk under the mount: the files, no -shm, no WAL or journal left.
        let backing = try FileManager.default.contentsOfDirectory(atPath: dir.file("backing")).sorted()
        #expect(backing == ["fuse.sqlite", "fuse.sqlite.lock", "herald-shared.sqlite"], "\(backing)")
        let status = try herald(["status", path.path])
        #expect(status.status == 0 && status.stdout.contains("300 sent"), "\(status.stdout)\(status.stderr)")
        withExtendedLifetime(mount) {}
    }
}
