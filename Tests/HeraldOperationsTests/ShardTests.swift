import HeraldCore
import HeraldJob
import HeraldTestSupport
@testable import HeraldOperations
import Testing

/// `--shard k/n`: parsing, the environment of a Kubernetes Indexed Job, paths, and the hash.
@Suite struct ShardTests {
    static func token(_ i: Int) -> DeviceToken { DeviceToken(trustedCanonical: String(format: "%064x", i)) }

    @Test func parsesKOfNAndRefusesWhatIsNotAShard() throws {
        let s = try Shard(text: "2/5")
        #expect(s.index == 2 && s.count == 5 && s.suffix == "-shard-2-of-5")
        for bad in ["5/5", "-1/3", "1/0", "1", "a/b", "1/2/3", "", "1/"] {
            #expect(throws: ShardError.self, "\(bad)") { try Shard(text: bad) }
        }
    }

    @Test func readsTheIndexedJobEnvironmentAndRefusesHalfOfIt() throws {
        #expect(try Shard.resolve(option: nil, environment: [:]) == nil)
        #expect(try Shard.resolve(option: nil, environment: ["JOB_COMPLETION_INDEX": "3", "HERALD_SHARD_COUNT": "4"]) == Shard(index: 3, count: 4))
        // --shard wins over the environment.
        #expect(try Shard.resolve(option: "0/2", environment: ["JOB_COMPLETION_INDEX": "3", "HERALD_SHARD_COUNT": "4"]) == Shard(index: 0, count: 2))
        // An Indexed Job without HERALD_SHARD_COUNT would otherwise send the whole campaign from every pod.
        #expect(throws: ShardError.self) { try Shard.resolve(option: nil, environment: ["JOB_COMPLETION_INDEX": "0"]) }
        #expect(throws: ShardError.self) { try Shard.resolve(option: nil, environment: ["HERALD_SHARD_COUNT": "4"]) }
        #expect(throws: ShardError.self) { try Shard.resolve(option: nil, environment: ["JOB_COMPLETION_INDEX": "4", "HERALD_SHARD_COUNT": "4"]) }
        #expect(throws: ShardError.self) { try Shard.resolve(option: nil, environment: ["JOB_COMPLETION_INDEX": "x", "HERALD_SHARD_COUNT": "4"]) }
    }

    @Test func eachShardHasItsOwnStateFileLockAndReportsDirectory() throws {
        let dir = TemporaryDirectory("shard")
        try dir.write("a.csv", "token\n")
        let job = try dir.write("job.yaml", """
            campaign: daily-{date}
            audience: { files: [a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template: { aps: { alert: "hi" } } }
            state: /srv/state/daily-{date}.sqlite
            reports: /srv/reports/{campaign}/
            """)
        let spec = try JobLoader.load(path: job)
        let s = try Shard(text: "1/4").apply(to: spec)
        #expect(s.statePath == "/srv/state/daily-{date}-shard-1-of-4.sqlite")
        #expect(s.reports.dir == "/srv/reports/{campaign}-shard-1-of-4")
        #expect(Shard.insert("-shard-0-of-2", beforeExtensionOf: "/a.b/state") == "/a.b/state-shard-0-of-2")
    }

    /// Vectors computed independently with Python:
    /// `int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big") % n`.
    @Test func theShardIsSHA256OfTheNormalizedTokenBigEndianModN() {
        #expect(Shard.of(Self.token(1), count: 3) == 1 && Shard.of(Self.token(1), count: 4) == 2 && Shard.of(Self.token(1), count: 7) == 5)
        #expect(Shard.of(Self.token(2), count: 3) == 2 && Shard.of(Self.token(2), count: 7) == 6)
        #expect(Shard.of(Self.token(3), count: 4) == 0 && Shard.of(Self.token(255), count: 7) == 3)
        let expected = "121210122212212220020200002001002122101222210021201020022212"
        #expect((1...60).map { String(Shard.of(Self.token($0), count: 3)) }.joined() == expected)
    }

    @Test func everyTokenAndEveryRejectedRowBelongsToExactlyOneShard() throws {
        let shards = try (0..<3).map { try Shard(index: $0, count: 3) }
        for i in 1...300 {
            #expect(shards.filter { $0.owns(Self.token(i)) }.count == 1)
            #expect(shards.filter { $0.ownsRejectedRow(line: i) }.count == 1)
        }
    }

    @Test func stateFilesOfAnotherLayoutAreFound() throws {
        let dir = TemporaryDirectory("layouts")
        for name in ["c.sqlite.lock", "c-shard-0-of-4.sqlite", "c-shard-0-of-4.sqlite-wal", "cc-shard-0-of-2.sqlite", "herald-shared.sqlite"] {
            try dir.write(name, "")
        }
        let state = dir.file("c.sqlite")
        #expect(Shard.otherLayouts(of: state, than: try Shard(text: "1/4")).isEmpty)
        #expect(Shard.otherLayouts(of: state, than: try Shard(text: "1/2")) == [dir.file("c-shard-0-of-4.sqlite")])
        #expect(Shard.otherLayouts(of: state, than: nil) == [dir.file("c-shard-0-of-4.sqlite")])
        try dir.write("c.sqlite", "")
        #expect(Shard.otherLayouts(of: state, than: try Shard(text: "1/4")) == [state])
    }
}
