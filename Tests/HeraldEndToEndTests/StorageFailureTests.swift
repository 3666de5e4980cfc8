import Foundation
import HeraldTestSupport
import Testing

private let tmpfs = Prerequisite(geteuid() == 0 && FileManager.default.fileExists(atPath: "/bin/mount"),
                                 "root and /bin/mount (the Debian package mount) to mount a tmpfs")

/// A full disk under the state file is the disk's fault, not the job's: `herald run` exits 4 at
/// every stage with a message naming the file and the disk, loses nothing it recorded, and the
/// same command finishes the campaign once there is room, each token answered 200 once (the
/// requests in flight when the disk filled are sent again with the same apns-id).
///
/// The state file lives on a real tmpfs of a few MiB mounted for the test (root only: mounting
/// needs CAP_SYS_ADMIN; CI runs as root).
@Suite(.serialized, .enabled(if: tmpfs.runs, tmpfs.skipReason))
struct StorageFailureTests {
    let dir = TemporaryDirectory("e2e-disk")

    /// A tmpfs of `megabytes` at `path`, unmounted when the value goes away.
    final class SmallDisk {
        let path: String
        init(at path: String, megabytes: Int) throws {
            self.path = path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let r = try ProcessRunner.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0700", "tmpfs", path])
            guard r.status == 0 else { throw TestSupportError("mount tmpfs at \(path): \(r.stderr)") }
        }
        func resize(megabytes: Int) throws {
            let r = try ProcessRunner.run("/bin/mount", ["-o", "remount,size=\(megabytes)m", path])
            guard r.status == 0 else { throw TestSupportError("remount \(path): \(r.stderr)") }
        }
        /// Writes a file until the disk refuses (ENOSPC); returns its path.
        func fill() throws -> String {
            let filler = path + "/filler"
            let fd = open(filler, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
            guard fd >= 0 else { throw TestSupportError("open \(filler): errno \(errno)") }
            defer { close(fd) }
            let block = [UInt8](repeating: 0xA5, count: 64 * 1024)
            while true {
                let n = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
            }
            #expect(errno == ENOSPC, "the filler stopped on a full disk")
            return filler
        }
        deinit { _ = try? ProcessRunner.run("/bin/umount", ["-l", path]) }
    }

    /// The crash tests' job, its state file on the small disk.
    func writeJob(name: String, _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TwoFileAudience.job(name) {
            $0.state.file = "../disk/\(name).sqlite"
            $0.reports.dir = "../reports/\(name)"
            configure(&$0)
        }.write(in: dir)
    }

    /// Runs `herald run job` to its end; returns the exit status and stderr.
    func run(_ job: JobFile, untilSent count: Int? = nil, then action: () throws -> Void = {}) throws -> (Int32, String) {
        try FileManager.default.createDirectory(atPath: dir.file("out"), withIntermediateDirectories: true)
        let errPath = dir.file("out/stderr-\(UUID().uuidString)")
        let p = try Herald().spawn(["run", job.path, "--progress", "never"], stdout: nil, stderr: errPath)
        if let count {
            let seen = RequestLog.wait(for: count, in: job.requestLog) { p.isRunning }
            #expect(seen >= count, "the disk fills mid-send (\(seen) answered before it did)")
            try action()
        }
        p.waitUntilExit()
        return (p.terminationStatus, try String(contentsOfFile: errPath, encoding: .utf8))
    }

    @Test func aFullDiskWhileTheAudienceIsRecordedExits4AndTheRerunSendsEveryoneOnce() throws {
        try tmpfs.require()
        try TwoFileAudience.write(in: dir)
        let disk = try SmallDisk(at: dir.file("disk"), megabytes: 1)
        let job = try writeJob(name: "ingest-full")
        let state = dir.file("disk/ingest-full.sqlite")
        let log = dir.file("out/ingest-full.ndjson")

        let (status, stderr) = try run(job)
        #expect(status == 4, "a full disk is exit 4 (rerun to resume), not 2: \(stderr)")
        #expect(stderr.contains(state) && stderr.contains("disk") && stderr.contains("full"), "names the file and the disk: \(stderr)")
        #expect(stderr.contains("not the job"), "\(stderr)")
        #expect(RequestLog.lineCount(log) == 0, "nothing is sent before the audience is recorded")

        try disk.resize(megabytes: 256)
        let (again, againErr) = try run(job)
        #expect(again == 0, "\(againErr)")
        TwoFileAudience.expectEveryoneOnce(try RequestLog.read(log), allowedResends: 0)
    }

    @Test func aFullDiskWhileSendingExits4AndTheRerunSendsEachTokenOnce() throws {
        try tmpfs.require()
        try TwoFileAudience.write(in: dir)
        let disk = try SmallDisk(at: dir.file("disk"), megabytes: 256)
        // Slow enough that the disk fills with most of the campaign still to send.
        let job = try writeJob(name: "send-full") { $0.throttle.rate = 2000 }
        let state = dir.file("disk/send-full.sqlite")
        let log = dir.file("out/send-full.ndjson")

        var filler = ""
        let (status, stderr) = try run(job, untilSent: 2_000) { filler = try disk.fill() }
        #expect(status == 4, "a full disk while sending is exit 4: \(stderr)")
        #expect(stderr.contains(state) && stderr.contains("disk") && stderr.contains("full"), "names the file and the disk: \(stderr)")
        #expect(stderr.contains("not the job"), "\(stderr)")
        let sentBefore = RequestLog.lineCount(log)
        #expect(sentBefore < TwoFileAudience.count, "stopped before the end (\(sentBefore) answered)")

        try FileManager.default.removeItem(atPath: filler)
        let (again, againErr) = try run(job)
        #expect(again == 0, "\(againErr)")
        // Requests answered while the disk was full were never recorded: they go again, with
        // their first apns-id, and nothing else is sent twice.
        TwoFileAudience.expectEveryoneOnce(try RequestLog.read(log), allowedResends: CrashResumeTests.window)
    }
}
