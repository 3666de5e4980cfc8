import Foundation
import HeraldCore
import HeraldPayload
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Experiments (docs/experiments.md) on the built `herald run` against the simulator: the split
/// is the keyed hash `ExperimentAssigner` computes from the campaign and the token, on a plain
/// run, through a SIGKILL and under `--shard`; only the test reaches the simulator until a winner
/// is chosen, and then only the recipients waiting for it; the holdout never does, takes no
/// frequency-cap slot, and is listed in holdout.csv; reports, events and summary.json agree with
/// the simulator's request log, which is the truth of what was sent.
@Suite(.serialized) struct ExperimentRunTests {
    let dir = TemporaryDirectory("e2e-experiment")
    let herald = Herald()

    /// Each variant's alert, so a request's body says which variant it carries.
    static let alerts = ["a": "offer A", "b": "offer B"]

    // MARK: The job and what the hash says

    /// An experiment over `count` tokens (`id,token` rows, ids `u1`…), variants a and b of equal
    /// weight, `collapse_id: auto`. `experiment` replaces the default experiment section's lines.
    func writeJob(_ name: String, count: Int, testShare: String? = "20%", holdout: String? = "5%", winner: String? = nil,
             variants: String? = nil, _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        var lines = ["experiment:"]
        if let testShare { lines.append("  test_share: \(testShare)") }
        if let holdout { lines.append("  holdout: \(holdout)") }
        if let winner { lines.append("  winner: \(winner)") }
        lines.append("  variants:")
        lines.append(variants ?? """
                - { name: a, template: { aps: { alert: "\(Self.alerts["a"]!)" } } }
                - { name: b, template: { aps: { alert: "\(Self.alerts["b"]!)" } } }
            """)
        return try TestJob(name, rows: ["id,token"] + (1...count).map { "u\($0),\(token($0))" }) {
            $0.audience.idField = "id"
            $0.push.type = "alert"
            $0.push.collapseId = "auto"
            $0.push.template = nil
            $0.extra = lines.joined(separator: "\n")
            configure(&$0)
        }.write(in: dir)
    }

    /// What deliveries.csv must say of each token (`variant`, `rollout`), computed with herald's
    /// own `ExperimentAssigner` from the campaign's name and the token alone. `winner`: the
    /// rollout's variant once it is chosen (empty before).
    static func split(count: Int, campaign: String, testShare: Double?, holdout: Double,
                      winner: String = "") -> [String: (variant: String, rollout: String)] {
        let spec = ExperimentSpec(testShare: testShare, holdout: holdout,
                                  variants: ["a", "b"].map { ExperimentSpec.Variant(name: $0, template: .object([])) })
        let assigner = ExperimentAssigner(experiment: spec, campaign: campaign)
        var out: [String: (String, String)] = [:]
        for t in (1...count).map({ token($0) }) {
            switch assigner.arm(of: DeviceToken(trustedCanonical: t)) {
            case .holdout: out[t] = ("holdout", "0")
            case .variant(let i): out[t] = (spec.variants[i].name, "0")
            case .rollout: out[t] = (winner, "1")
            }
        }
        return out
    }

    static func members(_ split: [String: (variant: String, rollout: String)], _ test: (String, String) -> Bool) -> Set<String> {
        Set(split.filter { test($0.value.variant, $0.value.rollout) }.keys)
    }

    // MARK: Reading what the run left

    /// One request in the simulator's log.
    struct Sent { var token: String; var body: String; var apnsId: String; var collapseId: String? }

    func sent(_ job: JobFile) throws -> [Sent] {
        try job.requestEntries().compactMap { o in
            guard let token = o["token"] as? String else { return nil }
            let headers = o["headers"] as? [String: String] ?? [:]
            return Sent(token: token, body: o["body"] as? String ?? "", apnsId: o["apns_id"] as? String ?? "",
                        collapseId: headers["apns-collapse-id"])
        }
    }

    /// deliveries.csv by token.
    static func byToken(_ rows: [[String: String]]) -> [String: [String: String]] {
        Dictionary(rows.map { ($0["token"] ?? "", $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Every token's `variant` and `rollout` columns equal the hash's.
    func expectSplit(_ rows: [[String: String]], _ split: [String: (variant: String, rollout: String)],
                     sourceLocation: SourceLocation = #_sourceLocation) {
        let rows = Self.byToken(rows)
        #expect(Set(rows.keys) == Set(split.keys), "one row per recipient", sourceLocation: sourceLocation)
        let wrong = split.filter { token, want in rows[token]?["variant"] != want.variant || rows[token]?["rollout"] != want.rollout }
        #expect(wrong.isEmpty, "\(wrong.count) recipient(s) not in the hash's arm, e.g. \(wrong.first.map { "\($0.key): want \($0.value), got \(rows[$0.key] ?? [:])" } ?? "")",
                sourceLocation: sourceLocation)
    }

    /// summary.json's `experiment.arms`, each as (variant or nil, rollout) → (recipients, counts).
    static func arms(_ summary: [String: Any]) throws -> [(key: String, recipients: Int, counts: [String: Int])] {
        let experiment = try #require(summary["experiment"] as? [String: Any], "summary.experiment: \(summary["experiment"] ?? "absent")")
        let arms = try #require(experiment["arms"] as? [[String: Any]])
        return try arms.map { arm in
            let variant = arm["variant"] as? String ?? "(waiting)"
            let rollout = try #require(arm["rollout"] as? Bool, "arm.rollout: \(arm)")
            let counts = (arm["counts"] as? [String: Int] ?? [:]).filter { $0.value != 0 }
            return ("\(variant)/\(rollout ? 1 : 0)", try #require(arm["recipients"] as? Int), counts)
        }
    }

    /// The arms deliveries.csv implies, in the order summary.json gives them (each variant's test,
    /// the holdout, the winner's rollout, those waiting).
    static func arms(of rows: [[String: String]]) -> [(key: String, recipients: Int, counts: [String: Int])] {
        var groups: [String: [String: Int]] = [:]
        for r in rows {
            let key = "\(r["variant"].flatMap { $0.isEmpty ? nil : $0 } ?? "(waiting)")/\(r["rollout"] ?? "")"
            groups[key, default: [:]][r["status"] ?? "", default: 0] += 1
        }
        func rank(_ key: String) -> Int {
            if key.hasPrefix("holdout/") { return 1 }
            if key.hasPrefix("(waiting)/") { return 3 }
            return key.hasSuffix("/1") ? 2 : 0
        }
        return groups.sorted { (rank($0.key), $0.key) < (rank($1.key), $1.key) }
            .map { ($0.key, $0.value.values.reduce(0, +), $0.value) }
    }

    func expectArms(_ summary: [String: Any], match rows: [[String: String]], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let got = try Self.arms(summary), want = Self.arms(of: rows)
        #expect(got.map(\.key) == want.map(\.key), "arms and their order", sourceLocation: sourceLocation)
        for (g, w) in zip(got, want) {
            #expect(g.recipients == w.recipients && g.counts == w.counts, "arm \(g.key): \(g) vs deliveries.csv \(w)", sourceLocation: sourceLocation)
        }
    }

    // MARK: 1, 2. The test: only the test is sent, each its variant, and the split is the hash

    @Test func theTestSendsOnlyTheTestEachItsVariantAndEveryReportAgrees() throws {
        let count = 3_000, name = "exp-test"
        let job = try writeJob(name, count: count) { $0.events = "{ file: ../out/exp-test-events.ndjson }" }
        let r = try herald.run(job)
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stdout.contains("experiment test finished: ") && r.stdout.contains("recipient(s) await the winner; choose one of a, b"), "\(r.stdout)")

        // The split is the keyed hash, for every recipient.
        let split = Self.split(count: count, campaign: name, testShare: 0.20, holdout: 0.05)
        let rows = try job.deliveries()
        expectSplit(rows, split)
        let test = Self.members(split) { v, r in r == "0" && v != "holdout" }
        let holdout = Self.members(split) { v, _ in v == "holdout" }
        let waiting = Self.members(split) { _, r in r == "1" }
        // Binomial counts: each share within 4.5/√N of its target (docs/experiments.md), so a broken hash
        // that puts everyone in one arm cannot pass as a split.
        let bound = 4.5 / Double(count).squareRoot() * Double(count)
        #expect(abs(Double(test.count) - 0.20 * Double(count)) < bound && abs(Double(holdout.count) - 0.05 * Double(count)) < bound,
                "test \(test.count), holdout \(holdout.count) of \(count)")

        // The simulator saw exactly the test, each once, each its variant's body and collapse id.
        let requests = try sent(job)
        #expect(Set(requests.map(\.token)) == test, "the test and nobody else reached the simulator")
        #expect(requests.count == test.count, "each test recipient once")
        #expect(Set(requests.map(\.token)).isDisjoint(with: holdout.union(waiting)))
        let wrongBody = requests.filter { s in
            let v = split[s.token]?.variant ?? "?"
            return !s.body.contains("\"alert\":\"\(Self.alerts[v] ?? "?")\"") || s.collapseId != "herald:\(name):\(v)"
        }
        #expect(wrongBody.isEmpty, "every body is its variant's: \(wrongBody.prefix(2))")

        // Statuses: the test sent, the holdout held out, the rest waiting.
        let rowByToken = Self.byToken(rows)
        #expect(test.allSatisfy { rowByToken[$0]?["status"] == "sent" })
        func neverTried(_ t: String) -> Bool { rowByToken[t]?["attempts"] == "0" && rowByToken[t]?["first_attempt_at"] == "" }
        #expect(holdout.allSatisfy { rowByToken[$0]?["status"] == "held_out" && neverTried($0) })
        #expect(waiting.allSatisfy { rowByToken[$0]?["status"] == "awaiting_winner" && neverTried($0) })

        // summary.json: the counts and the experiment's arms agree with deliveries.csv.
        let summary = try job.summary()
        let counts = try #require(summary["counts"] as? [String: Int])
        #expect(counts["sent"] == test.count && counts["held_out"] == holdout.count && counts["awaiting_winner"] == waiting.count
                && counts["distinct"] == count && counts["pending"] == 0, "\(counts)")
        #expect(summary["finished_at"] is NSNull, "the run stays open for the winner")
        #expect(summary["exit_code"] as? Int == 0)
        #expect((summary["experiment"] as? [String: Any])?["winner"] is NSNull)
        try expectArms(summary, match: rows)
        #expect(try Self.arms(summary).map(\.key) == ["a/0", "b/0", "holdout/0", "(waiting)/1"])

        // holdout.csv: exactly the held-out recipients, with their ids and lines.
        let listed = try CSV.rows(job.report("holdout.csv"))
        #expect(Set(listed.map { $0["token"] ?? "" }) == holdout && listed.count == holdout.count)
        #expect(listed.allSatisfy { row in
            let t = row["token"] ?? "", i = Int(t, radix: 16) ?? -1
            return row["recipient_id"] == "u\(i)" && row["line"] == String(i + 1) && row["file"] == rowByToken[t]?["file"]
        }, "\(listed.prefix(2))")

        // Delivery events: one per test and holdout recipient, variant and rollout as in deliveries.csv; none for those waiting.
        let events = try JSON.lines(dir.file("out/exp-test-events.ndjson"))
        let eventTokens = events.map { $0["token"] as? String ?? "" }
        #expect(Set(eventTokens) == test.union(holdout) && eventTokens.count == test.count + holdout.count)
        let wrongEvents = events.filter { e in
            let t = e["token"] as? String ?? "", want = split[t]
            return e["variant"] as? String != want?.variant || e["rollout"] as? Bool != false
                || e["type"] as? String != (want?.variant == "holdout" ? "held_out" : "sent")
        }
        #expect(wrongEvents.isEmpty, "events carry the recipient's variant and rollout: \(wrongEvents.prefix(2))")

        // A rerun without a winner finds nothing to send.
        let before = job.sent
        let again = try herald.run(job)
        #expect(again.status == 0, "\(again.output)")
        #expect(again.stdout.contains("await the winner"), "\(again.stdout)")
        #expect(job.sent == before, "nothing sent twice")
        #expect(try JSON.lines(dir.file("out/exp-test-events.ndjson")).count == events.count, "and no event twice")
    }

    // MARK: 4. The winner: sent to those waiting, and to nobody else

    @Test func theWinnerGoesToEveryoneWaitingAndToNobodyElse() throws {
        let count = 2_000, name = "exp-winner"
        let job = try writeJob(name, count: count) { $0.events = "{ file: ../out/exp-winner-events.ndjson }" }
        #expect(try herald.run(job).status == 0)
        let afterTest = try sent(job)
        let split = Self.split(count: count, campaign: name, testShare: 0.20, holdout: 0.05)
        let waiting = Self.members(split) { _, r in r == "1" }
        let test = Self.members(split) { v, r in r == "0" && v != "holdout" }
        #expect(Set(afterTest.map(\.token)) == test)

        // A winner that is no variant: exit 2 naming it, and nothing sent.
        let noSuch = try herald.run(job, ["--winner", "c"])
        #expect(noSuch.status == 2 && noSuch.stderr.contains("--winner names no variant: \"c\""), "\(noSuch.output)")
        let inJob = try writeJob("exp-winner-c", count: 10, winner: "c")
        let noSuchInJob = try herald.run(inJob)
        #expect(noSuchInJob.status == 2, "\(noSuchInJob.output)")
        let winnerLine = try inJob.line(of: "winner: c")
        #expect(noSuchInJob.stderr.contains("experiment.winner names no variant: \"c\"")
                && noSuchInJob.stderr.contains("line \(winnerLine)"), "\(noSuchInJob.stderr)")
        #expect(job.sent == afterTest.count && inJob.sent == 0)

        // --winner b: b's body to every recipient waiting for it, once, and to nobody else.
        let r = try herald.run(job, ["--winner", "b"])
        #expect(r.status == 0, "\(r.output)")
        let all = try sent(job)
        let rollout = all.dropFirst(afterTest.count)
        #expect(Set(rollout.map(\.token)) == waiting && rollout.count == waiting.count, "the rollout is exactly those waiting")
        #expect(rollout.allSatisfy { $0.body.contains("\"alert\":\"offer B\"") && $0.collapseId == "herald:\(name):b" })
        #expect(Dictionary(grouping: all, by: \.token).values.allSatisfy { $0.count == 1 }, "nobody twice")

        let winnerSplit = Self.split(count: count, campaign: name, testShare: 0.20, holdout: 0.05, winner: "b")
        let rows = try job.deliveries()
        expectSplit(rows, winnerSplit)
        let rowByToken = Self.byToken(rows)
        #expect(waiting.allSatisfy { rowByToken[$0]?["status"] == "sent" })
        let summary = try job.summary()
        let experiment = try #require(summary["experiment"] as? [String: Any])
        #expect(experiment["winner"] as? String == "b")
        #expect(!(summary["finished_at"] is NSNull) && summary["finished_at"] != nil, "the campaign is finished")
        let counts = try #require(summary["counts"] as? [String: Int])
        #expect(counts["sent"] == count - split.values.filter { $0.variant == "holdout" }.count && counts["awaiting_winner"] == 0, "\(counts)")
        try expectArms(summary, match: rows)
        #expect(try Self.arms(summary).map(\.key) == ["a/0", "b/0", "holdout/0", "b/1"])

        // The rollout's events say b and rollout true.
        let events = try JSON.lines(dir.file("out/exp-winner-events.ndjson"))
        let rolloutEvents = events.filter { waiting.contains($0["token"] as? String ?? "") }
        #expect(rolloutEvents.count == waiting.count
                && rolloutEvents.allSatisfy { $0["variant"] as? String == "b" && $0["rollout"] as? Bool == true && $0["type"] as? String == "sent" })

        // Reruns, with the winner or without, send nothing.
        for args in [["--winner", "b"], []] {
            let again = try herald.run(job, args)
            #expect(again.status == 0, "\(args): \(again.output)")
        }
        #expect(job.sent == all.count)

        // holdout.csv is one of the finished campaign's reports: lost, a rerun writes it again.
        let holdout = try String(contentsOfFile: job.report("holdout.csv"), encoding: .utf8)
        try FileManager.default.removeItem(atPath: job.report("holdout.csv"))
        let regenerated = try herald.run(job)
        #expect(regenerated.status == 0 && regenerated.output.contains("missing or partial reports regenerated"), "\(regenerated.output)")
        #expect(try String(contentsOfFile: job.report("holdout.csv"), encoding: .utf8) == holdout)
        #expect(job.sent == all.count)
    }

    // MARK: 5. A bad variant stops the run before anything is sent

    /// A mistake in a template, and what the message says of it.
    static func bad(_ kind: String) -> (template: String, problem: String) {
        kind == "number" ? (#"{ aps: { alert: 5 } }"#, "aps.alert must be")
            : ("{ aps: { alert: \"\(String(repeating: "x", count: 4_200))\" } }", "the limit is 4096")
    }

    /// Either variant (the first, which also stands in for `push.template`, or another), either
    /// mistake (an alert that is a number, a template over 4096 bytes): `herald run` and
    /// `herald validate` exit 2 naming the variant's template and its line, and nothing is sent.
    @Test(arguments: ["a", "b"], ["number", "oversize"])
    func aBadVariantTemplateIsExit2NamingItAndItsLine(variant: String, kind: String) throws {
        let bad = Self.bad(kind)
        let good = #"{ aps: { alert: "fine" } }"#
        let job = try writeJob("exp-bad-\(variant)-\(kind)", count: 50, variants: """
                - name: a
                  template: \(variant == "a" ? bad.template : good)
                - name: b
                  template: \(variant == "b" ? bad.template : good)
            """)
        let line = try job.line(of: "template: \(bad.template.prefix(20))")
        for command in ["run", "validate"] {
            let r = try herald([command, job.path])
            #expect(r.status == 2, "herald \(command): \(r.output)")
            #expect(r.stderr.contains("experiment.variants.\(variant).template") && r.stderr.contains(bad.problem),
                    "herald \(command) names the variant: \(r.stderr)")
            #expect(r.stderr.contains("line \(line)"), "herald \(command) names the line of \(variant)'s template (\(line)): \(r.stderr)")
        }
        #expect(job.sent == 0, "nothing sent")
        #expect(!FileManager.default.fileExists(atPath: job.stateFile), "nothing recorded")
    }

    // MARK: Rows: a test recipient needs its variant to render, everyone else every variant

    /// Variant b needs `first_name` (no default), a does not; every other row has none. A test
    /// recipient of a without one is sent; one of b, a held-out recipient and one waiting for the
    /// winner are invalid (any variant may win, the holdout stands for everyone). `herald validate`,
    /// which reads the audience as `herald run` does, counts the same rows.
    @Test func eachRowMustRenderUnderEveryVariantItMayGet() throws {
        let count = 1_000, name = "exp-rows"
        let job = try TestJob(name, rows: ["id,token,first_name"] + (1...count).map { "u\($0),\(token($0)),\($0 % 2 == 0 ? "" : "N\($0)")" }) {
            $0.audience.idField = "id"
            $0.audience.maxInvalidRows = "100%"
            $0.push.type = "alert"
            $0.push.template = nil
            $0.extra = """
                experiment:
                  test_share: 40%
                  holdout: 10%
                  variants:
                    - { name: a, template: { aps: { alert: "Hi {{first_name|there}}" } } }
                    - { name: b, template: { aps: { alert: "Hi {{first_name}}" } } }
                """
        }.write(in: dir)
        let split = Self.split(count: count, campaign: name, testShare: 0.40, holdout: 0.10)
        let nameless = Set((1...count).filter { $0 % 2 == 0 }.map { token($0) })
        let invalid = nameless.filter { split[$0]?.variant != "a" }
        let validated = try herald(["validate", job.path, "--json"]).json()

        let r = try herald.run(job)
        #expect(r.status == 0, "\(r.output)")
        let lines = Set(try CSV.rows(job.report("invalid.csv")).map { $0["line"] ?? "" })
        #expect(lines == Set(invalid.map { String(Int($0, radix: 16)! + 1) }), "invalid.csv: exactly the rows some possible variant cannot render")
        let counts = try #require(try job.counts() as? [String: Int])
        #expect(counts["invalid"] == invalid.count && counts["distinct"] == count - invalid.count, "\(counts)")
        let requests = try sent(job)
        #expect(Set(requests.map(\.token)) == Self.members(split) { v, r in r == "0" && v != "holdout" }.subtracting(invalid))
        #expect(validated["invalid"] as? Int == invalid.count && validated["valid"] as? Int == count - invalid.count,
                "herald validate counts the rows herald run rejects: \(validated)")
    }

    // MARK: A changed audience: newcomers are assigned by the same hash, nobody recorded moves

    /// The audience changes between the test and the winner (tokens 1–1,500, then 501–2,000): new
    /// tokens are assigned by the hash and sent if in the test, those that vanished are not sent
    /// the winner, and no recorded recipient changes arm.
    @Test func aChangedAudienceAssignsNewcomersByTheSameHashAndMovesNobody() throws {
        let name = "exp-changed"
        func rows(_ range: ClosedRange<Int>) -> [String] { ["id,token"] + range.map { "u\($0),\(token($0))" } }
        var spec = TestJob(name, rows: rows(1...1_500)) {
            $0.audience.idField = "id"
            $0.push.type = "alert"
            $0.push.template = nil
            $0.extra = """
                experiment:
                  test_share: 20%
                  holdout: 5%
                  variants:
                    - { name: a, template: { aps: { alert: "offer A" } } }
                    - { name: b, template: { aps: { alert: "offer B" } } }
                """
        }
        let job = try spec.write(in: dir)
        #expect(try herald.run(job).status == 0)
        let split = Self.split(count: 2_000, campaign: name, testShare: 0.20, holdout: 0.05)
        let test = Self.members(split) { v, r in r == "0" && v != "holdout" }
        let first = Set(HeraldTestSupport.tokens(1...1_500)), second = Set(HeraldTestSupport.tokens(501...2_000)), vanished = Set(HeraldTestSupport.tokens(1...500))
        #expect(Set(try sent(job).map(\.token)) == test.intersection(first))

        spec.rows = rows(501...2_000)
        _ = try spec.write(in: dir)
        let rerun = try herald.run(job)
        #expect(rerun.status == 0, "\(rerun.output)")
        #expect(Set(try sent(job).map(\.token)) == test.intersection(first.union(second)), "the new test recipients are sent, nobody twice")
        let rows = Self.byToken(try job.deliveries())
        let moved = rows.filter { t, row in row["variant"] != split[t]?.variant && !(split[t]?.rollout == "1" && row["variant"] == "") }
        #expect(moved.isEmpty, "everyone in the hash's arm: \(moved.prefix(2))")

        let winner = try herald.run(job, ["--winner", "b"])
        #expect(winner.status == 0, "\(winner.output)")
        let requests = try sent(job)
        let waiting = Self.members(split) { _, r in r == "1" }
        #expect(Set(requests.map(\.token)) == test.intersection(first.union(second)).union(waiting.intersection(second)),
                "the winner goes to those waiting that are still in the audience")
        #expect(Dictionary(grouping: requests, by: \.token).values.allSatisfy { $0.count == 1 })
        let after = Self.byToken(try job.deliveries())
        #expect(waiting.intersection(vanished).allSatisfy { after[$0]?["status"] == "suppressed" && after[$0]?["reason"] == "vanished_from_audience" },
                "\(waiting.intersection(vanished).prefix(2).map { after[$0] ?? [:] })")
    }

    // MARK: 3. SIGKILL mid-send, in the test and in the rollout, and resume

    /// Starts `herald run`, SIGKILLs it once the simulator has answered `after` more requests.
    func killMidSend(_ job: JobFile, _ args: [String] = [], after: Int) throws -> Int {
        let start = job.sent
        let p = try herald.start(["run", job.path] + args)
        let seen = RequestLog.wait(for: start + after, in: job.requestLog) { p.process.isRunning }
        kill(p.pid, SIGKILL)
        p.process.waitUntilExit()
        #expect(p.process.terminationReason == .uncaughtSignal, "killed, not finished")
        return seen - start
    }

    @Test func aSigkillInTheTestAndInTheRolloutMovesNobody() throws {
        let count = 2_500, name = "exp-kill"
        // Slow enough to be killed mid-send: 400 pushes a second, 20 ms answers, 20 streams.
        let job = try writeJob(name, count: count, testShare: "40%", holdout: "10%") {
            $0.apns.connections = 1
            $0.apns.streamsPerConnection = 20
            $0.apns.simulator.latencyMs = 20
            $0.throttle.rate = 400
        }
        let split = Self.split(count: count, campaign: name, testShare: 0.40, holdout: 0.10)
        let test = Self.members(split) { v, r in r == "0" && v != "holdout" }
        let holdout = Self.members(split) { v, _ in v == "holdout" }
        let waiting = Self.members(split) { _, r in r == "1" }
        /// The requests on the wire at a kill plus those answered and not yet committed: a
        /// resend of one of these is allowed (with its first attempt's apns-id).
        let window = 2 * 20

        let killed = try killMidSend(job, after: 200)
        #expect(killed >= 200 && killed < test.count, "killed mid-test (\(killed) answered of \(test.count))")
        let rerun = try herald.run(job)
        #expect(rerun.status == 0, "\(rerun.output)")
        expectSplit(try job.deliveries(), split)
        try expectOnce(try sent(job), exactly: test, split: split, window: window)

        let killedRollout = try killMidSend(job, ["--winner", "b"], after: 200)
        #expect(killedRollout >= 200 && killedRollout < waiting.count, "killed mid-rollout (\(killedRollout) of \(waiting.count))")
        let finish = try herald.run(job, ["--winner", "b"])
        #expect(finish.status == 0, "\(finish.output)")
        let winnerSplit = Self.split(count: count, campaign: name, testShare: 0.40, holdout: 0.10, winner: "b")
        expectSplit(try job.deliveries(), winnerSplit)
        let all = try sent(job)
        try expectOnce(all, exactly: test.union(waiting), split: winnerSplit, window: 2 * window)
        #expect(Set(all.map(\.token)).isDisjoint(with: holdout), "no held-out token reached the simulator")
        #expect(try job.counts()["sent"] as? Int == test.count + waiting.count)
    }

    /// The log holds exactly `tokens`, each with its variant's body; a token sent more than once
    /// is an in-flight request resent after the kill, with the same apns-id and body every time.
    func expectOnce(_ requests: [Sent], exactly tokens: Set<String>, split: [String: (variant: String, rollout: String)],
                    window: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let byToken = Dictionary(grouping: requests, by: \.token)
        #expect(Set(byToken.keys) == tokens, "exactly these recipients reached the simulator", sourceLocation: sourceLocation)
        let resent = byToken.filter { $0.value.count > 1 }
        #expect(resent.count <= window, "\(resent.count) token(s) sent more than once (the in-flight window is \(window))",
                sourceLocation: sourceLocation)
        #expect(resent.allSatisfy { Set($0.value.map(\.apnsId)).count == 1 }, "a resend keeps its apns-id", sourceLocation: sourceLocation)
        let wrong = requests.filter { !$0.body.contains("\"alert\":\"\(Self.alerts[split[$0.token]?.variant ?? ""] ?? "?")\"") }
        #expect(wrong.isEmpty, "every request carries its variant: \(wrong.prefix(2))", sourceLocation: sourceLocation)
    }

    // MARK: 6. Shards split as one run does, and their merged reports add up

    @Test func shardsSplitAsOneRunAndTheMergedReportsAddUp() throws {
        let count = 2_000, name = "exp-shards"
        let job = try writeJob(name, count: count)
        var shardArms: [String: Int] = [:]
        for k in 0..<2 {
            let r = try herald.run(job, ["--shard", "\(k)/2"])
            #expect(r.status == 0, "shard \(k): \(r.output)")
            let summary = try JSON.object(dir.file("reports/\(name)-shard-\(k)-of-2/summary.json"))
            for arm in try Self.arms(summary) { shardArms[arm.key, default: 0] += arm.recipients }
        }
        let split = Self.split(count: count, campaign: name, testShare: 0.20, holdout: 0.05)
        let test = Self.members(split) { v, r in r == "0" && v != "holdout" }
        let requests = try sent(job)
        #expect(Set(requests.map(\.token)) == test && requests.count == test.count, "the shards together sent the test once")

        let out = dir.file("reports/\(name)-merged")
        let merged = try herald(["report", "--merge", dir.file("reports/\(name)-shard-0-of-2"), dir.file("reports/\(name)-shard-1-of-2"),
                                 "--out", out])
        #expect(merged.status == 0, "\(merged.output)")
        let rows = try CSV.rows(out + "/deliveries.csv")
        expectSplit(rows, split)
        let summary = try JSON.object(out + "/summary.json")
        try expectArms(summary, match: rows)
        let mergedArms = try Self.arms(summary)
        #expect(Dictionary(uniqueKeysWithValues: mergedArms.map { ($0.key, $0.recipients) }) == shardArms, "the shards' arms add up")
        #expect(mergedArms.map(\.recipients).reduce(0, +) == count)
        #expect(Set(try CSV.rows(out + "/holdout.csv").map { $0["token"] ?? "" }) == Self.members(split) { v, _ in v == "holdout" })
    }

    // MARK: 7. The holdout (and those waiting) take no frequency-cap slot

    @Test func heldOutAndWaitingRecipientsTakeNoFrequencyCapSlot() throws {
        let count = 1_000
        let cap = "{ category: marketing, limits: [{ max: 1, per: 24h }] }"
        // Both campaigns read one audience and keep their state in one directory (one cap ledger).
        let first = try writeJob("exp-capped", count: count, testShare: "30%", holdout: "20%") { $0.throttle.frequencyCap = cap }
        #expect(try herald.run(first).status == 0)
        let split = Self.split(count: count, campaign: "exp-capped", testShare: 0.30, holdout: 0.20)
        let test = Self.members(split) { v, r in r == "0" && v != "holdout" }
        let untouched = Self.members(split) { v, r in v == "holdout" || r == "1" }

        let second = try TestJob("exp-capped-next", rows: ["token"] + (1...count).map { token($0) }) {
            $0.throttle.frequencyCap = cap
        }.write(in: dir)
        let r = try herald.run(second)
        #expect(r.status == 0, "\(r.output)")
        let reached = Set(try sent(second).map(\.token))
        #expect(reached == untouched, """
            the next campaign reaches exactly the held-out and waiting recipients of the first \
            (\(reached.intersection(test).count) test recipient(s) reached, \(untouched.subtracting(reached).count) held out or waiting capped)
            """)
        let reasons = try #require(try second.summary()["by_reason"] as? [String: Int])
        #expect(reasons["frequency_cap"] == test.count, "\(reasons)")

        // The winner's rollout takes its slots like any push: the second campaign took them.
        let rollout = try herald.run(first, ["--winner", "a"])
        #expect(rollout.status == 0, "\(rollout.output)")
        #expect(first.sent == test.count, "the rollout found no room")
        let rows = Self.byToken(try first.deliveries())
        #expect(Self.members(split) { _, r in r == "1" }.allSatisfy { rows[$0]?["status"] == "throttled" && rows[$0]?["reason"] == "frequency_cap" })
    }
}
