import Foundation
import HeraldTestSupport
import Testing

/// `herald run`'s operations flags on the built binary: --shard, --metrics-file, --log-format json,
/// --progress.
@Suite(.serialized) struct OperationsTests {
    let dir = TemporaryDirectory("e2e-ops")

    static func token(_ i: Int) -> String { String(format: "%064x", i) }

    /// Each token's shard among 3, computed independently with Python:
    /// `int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big") % 3` for t = token(1)…token(60).
    static let shardOf3 = Array("121210122212212220020200002001002122101222210021201020022212").map { Int(String($0))! }

    let herald = Herald()

    /// A job sending `rows` (`id,token`) from data/<name>.csv, every row counted however messy.
    func writeJob(_ name: String, rows: [String], _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TestJob(name, rows: ["id,token"] + rows) {
            $0.audience.idField = "id"
            $0.audience.maxInvalidRows = "100%"
            $0.apns.streamsPerConnection = 10
            configure(&$0)
        }.write(in: dir)
    }

    func summary(_ dir: String) throws -> [String: Any] { try JSON.object(dir + "/summary.json") }

    /// Three shards (two by --shard, one by a Kubernetes Indexed Job's environment) together send
    /// every token exactly once, each only its own share, and every row is reported by one shard.
    @Test func shardsTogetherSendEveryTokenExactlyOnceEachOnlyItsShare() throws {
        var rows = (1...60).map { "u\($0),\(Self.token($0))" }
        rows.append("dup,\(Self.token(7).uppercased())")     // line 62: a duplicate, in token 7's shard
        rows += ["bad1,xyz", "bad2,", "bad3,123"]           // lines 63-65: rejected rows, shard = line mod 3
        let job = try writeJob("sharded", rows: rows)
        for k in 0..<2 {
            let r = try herald.run(job, ["--shard", "\(k)/3"])
            #expect(r.status == 0, "shard \(k): \(r.stdout)\(r.stderr)")
        }
        let r = try herald.run(job, environment: ["JOB_COMPLETION_INDEX": "2", "HERALD_SHARD_COUNT": "3"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")

        // The simulator saw each token exactly once over the three runs.
        let log = try RequestLog.read(dir.file("out/sharded.ndjson"))
        #expect(log.count == 60 && log.values.allSatisfy { $0.count == 1 && $0[0].status == 200 })

        var rowsTotal = 0
        var invalidLines: [String] = []
        for k in 0..<3 {
            let reports = dir.file("reports/sharded-shard-\(k)-of-3")
            #expect(FileManager.default.fileExists(atPath: dir.file("state/sharded-shard-\(k)-of-3.sqlite")), "own state file")
            let tokens = Set(try CSV.rows(reports + "/deliveries.csv").map { $0["token"]! })
            let expected = Set((1...60).filter { Self.shardOf3[$0 - 1] == k }.map(Self.token))
            #expect(tokens == expected, "shard \(k) sent exactly its share")
            let s = try summary(reports)
            let counts = try #require(s["counts"] as? [String: Int])
            rowsTotal += counts["rows"] ?? 0
            #expect(counts["duplicates"] == (k == Self.shardOf3[6] ? 1 : 0), "the duplicate counts in its token's shard")
            let invalid = try CSV.rows(reports + "/invalid.csv").map { $0["line"]! }
            #expect(invalid.allSatisfy { Int($0)! % 3 == k }, "shard \(k) reports rejected rows at lines ≡ \(k) mod 3: \(invalid)")
            invalidLines += invalid
        }
        #expect(invalidLines.sorted() == ["63", "64", "65"], "each rejected row reported once")
        #expect(rowsTotal == 64, "every row counted by exactly one shard")
        // A shard's lock is its own: the same shard run again is finished, not blocked by the others.
        let again = try herald.run(job, ["--shard", "1/3"])
        #expect(again.status == 0 && again.stdout.contains("already finished"), "\(again.stdout)")
        // Another layout would split tokens differently and resend: refused before anything is read.
        for other in [["--shard", "0/2"], []] {
            let r = try herald.run(job, other)
            #expect(r.status == 2 && r.stderr.contains("another shard layout"), "\(other): \(r.stderr)")
        }
        #expect(try RequestLog.read(dir.file("out/sharded.ndjson")).count == 60)
        let status = try herald(["status", job.path, "--shard", "1/3"])
        #expect(status.status == 0 && status.stdout.contains("state/sharded-shard-1-of-3.sqlite"), "\(status.stdout)")
    }

    @Test func metricsFileIsWrittenAtomicallyWithCountsByStatusAndReason() throws {
        let rows = (1...20).map { "u\($0),\(Self.token($0))" } + ["d1,dead" + String(Self.token(1).dropFirst(4)), "x,nothex"]
        let job = try writeJob("metrics", rows: rows) { $0.apns.simulator.unregisteredPrefixes = ["dead"] }
        let prom = dir.file("metrics/herald.prom")
        try FileManager.default.createDirectory(atPath: dir.file("metrics"), withIntermediateDirectories: true)
        let r = try herald.run(job, ["--metrics-file", prom, "--metrics-interval", "1s"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let text = try String(contentsOfFile: prom, encoding: .utf8)
        let l = "campaign=\"metrics\""
        for expected in [
            "herald_recipients{\(l),status=\"sent\"} 20",
            "herald_recipients{\(l),status=\"failed\"} 1",
            "herald_recipients_by_reason{\(l),reason=\"Unregistered\"} 1",
            "herald_attempts_total{\(l),status=\"failed\",reason=\"Unregistered\"} 1",
            "herald_attempts_total{\(l),status=\"sent\",reason=\"\"} 20",
            "herald_invalid_rows{\(l),reason=\"invalid_token\"} 1",
            "herald_audience_rows{\(l),kind=\"rows\"} 22",
            "herald_last_exit_code{\(l)} 0",
            "herald_run_in_progress{\(l)} 0",
            "# TYPE herald_attempts_total counter",
        ] {
            #expect(text.contains(expected + "\n"), "missing \(expected) in\n\(text)")
        }
        #expect(text.contains("herald_last_success_timestamp_seconds{\(l)} "))
        #expect(text.contains("herald_run_duration_seconds{\(l)} "))
        #expect(!text.contains(Self.token(2)), "no token in metrics")
        #expect((try FileManager.default.attributesOfItem(atPath: prom)[.posixPermissions] as? Int) == 0o644)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("metrics")) == ["herald.prom"], "no temp file left")

        // A later run refused by the lock: exit code 75 recorded, last success kept.
        let success = text.split(separator: "\n").first { $0.hasPrefix("herald_last_success_timestamp_seconds") }
        try FileManager.default.createDirectory(atPath: dir.file("state"), withIntermediateDirectories: true)
        let fd = open(dir.file("state/metrics.sqlite.lock"), O_CREAT | O_RDWR, 0o600)
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        defer { close(fd) }
        let locked = try herald.run(job, ["--metrics-file", prom])
        #expect(locked.status == 75)
        let after = try String(contentsOfFile: prom, encoding: .utf8)
        #expect(after.contains("herald_last_exit_code{\(l)} 75\n"))
        #expect(after.split(separator: "\n").first { $0.hasPrefix("herald_last_success_timestamp_seconds") } == success)
    }

    /// --log-format json: every stderr line is one JSON object (progress and errors included);
    /// tokens cut to 8 hex digits unless --log-sensitive.
    @Test func jsonLogsAreOneObjectPerLineWithProgress() throws {
        let rows = (1...40).map { "u\($0),\(Self.token($0))" }
        let job = try writeJob("jsonlog", rows: rows) { $0.apns.simulator.latencyMs = 400; $0.retry.maxAttempts = 1 }
        let r = try herald.run(job, ["--log-format", "json", "--log-level", "info", "--progress", "auto", "--progress-interval", "1s"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let lines = r.stderr.split(separator: "\n")
        #expect(!lines.isEmpty)
        var progress = 0
        for line in lines {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], "not JSON: \(line)")
            #expect(o["time"] != nil && o["level"] != nil && o["message"] != nil && o["campaign"] == "jsonlog")
            if o["message"]?.hasPrefix("progress: ") == true {
                progress += 1
                // A tick that lands while the run is starting has no share to give (RunProgress:
                // `starting`, no percent); from reading on it has.
                let phase = try #require(o["phase"], "\(line)")
                #expect((phase == "starting") == (o["percent"] == nil), "\(line)")
            }
        }
        #expect(progress >= 1, "a progress line at least every second: \(r.stderr)")
        #expect(lines.last.map { $0.contains("\"message\":\"run ended\"") && $0.contains("\"sent\":\"40\"") } == true, "\(r.stderr)")

        // An error is JSON too.
        let missing = try herald(["run", dir.file("jobs/nope.yaml"), "--log-format", "json"])
        #expect(missing.status == 2)
        let e = try #require(try JSONSerialization.jsonObject(with: Data(missing.stderr.utf8)) as? [String: String], "\(missing.stderr)")
        #expect(e["level"] == "error" && e["message"]?.contains("nope.yaml") == true)
    }

    @Test func progressAlwaysRedrawsOneLineAndNeverIsSilent() throws {
        let rows = (1...30).map { "u\($0),\(Self.token($0))" }
        let job = try writeJob("progress", rows: rows) { $0.apns.simulator.latencyMs = 300 }
        let always = try herald.run(job, ["--progress", "always"])
        #expect(always.status == 0, "\(always.stderr)")
        #expect(always.stderr.contains("\r\u{1B}[Ksending"), "\(always.stderr.debugDescription)")
        #expect(always.stderr.hasSuffix("\r\u{1B}[K"), "the line is erased before the summary")
        let never = try herald.run(job, ["--progress", "never", "--new-run"])
        #expect(never.status == 0)
        #expect(!never.stderr.contains("\r") && !never.stderr.contains("progress:"), "\(never.stderr)")
    }

    /// Even at trace level with --log-sensitive, the key and the JWTs never reach the logs.
    @Test func secretsNeverReachTheLogsAtAnyLevel() throws {
        let key = TestKey()
        let keyPath = try key.writeP8(in: dir)
        let rows = (1...5).map { "u\($0),\(Self.token($0))" }
        let job = try writeJob("secrets", rows: rows) { $0.apns.keyFile = keyPath }
        for format in ["text", "json"] {
            let r = try herald.run(job, ["--new-run", "--log-level", "trace", "--log-sensitive", "--log-format", format])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            let body = key.privateKeyPEM.split(separator: "\n")[1]
            #expect(!r.stderr.contains(body) && !r.stdout.contains(body))
            #expect(!r.stderr.contains("eyJ") && !r.stdout.contains("eyJ"), "no JWT: \(r.stderr)")
        }
    }
}
