import Foundation
import HeraldTestSupport
import Testing

/// Jobs that would end "finished" having sent nothing the operator meant to send are refused
/// before anything is recorded as final (exit 2, by `herald validate` and `herald run` alike), so
/// the corrected job sends: quiet hours through 24:00 that cover the whole window or day, an
/// audience file with no data row, a `schedule.date` whose window has closed in every zone.
/// The simulator's log is the truth of what was sent.
@Suite(.serialized) struct UnsentCampaignTests {
    let dir = TemporaryDirectory("e2e-unsent")

    let herald = Herald()

    /// A job reading data/<name>.csv: `rows` (one token a row) when given, else what the test writes.
    func job(_ name: String, rows: [String]?, _ configure: (inout TestJob) -> Void = { _ in }) throws -> JobFile {
        try TestJob(name, tokens: rows) {
            $0.audience.files = ["../data/\(name).csv"]
            configure(&$0)
        }.write(in: dir)
    }

    func sent(_ name: String) -> Int { RequestLog.lineCount(dir.file("out/\(name).ndjson")) }

    /// Quiet hours `00:00`–`24:00` cover every minute: with or without `local_time`, and `24:00`
    /// as the end of quiet hours that cover the whole window.
    @Test(arguments: [
        ("{ local_time: { from: \"09:00\", to: \"11:00\" }, quiet_hours: { from: \"00:00\", to: \"24:00\" } }", "cover the whole day"),
        ("{ quiet_hours: { from: \"00:00\", to: \"24:00\" } }", "cover the whole day"),
        ("{ local_time: { from: \"22:00\", to: \"23:30\" }, quiet_hours: { from: \"21:00\", to: \"24:00\" } }", "cover the whole of local_time"),
    ])
    func quietHoursThatLeaveNoMinuteAreRefused(schedule: String, message: String) throws {
        let path = try job("quiet", rows: tokens(1...3)) { $0.schedule = schedule }
        for command in ["validate", "run"] {
            let r = try herald([command, path.path])
            #expect(r.status == 2, "\(command): \(r.stdout)\(r.stderr)")
            #expect(r.stderr.contains(message) && r.stderr.contains("quiet.yaml"), "\(command): \(r.stderr)")
        }
        #expect(sent("quiet") == 0)
    }

    @Test func aHeaderOnlyExportIsRefusedAndTheCorrectedOneSends() throws {
        let path = try job("header-only", rows: [])
        for command in ["validate", "run"] {
            let r = try herald([command, path.path])
            #expect(r.status == 2, "\(command): \(r.stdout)\(r.stderr)")
            #expect(r.stderr.contains("header-only.csv: a header and no data row") && r.stderr.contains("audience.allow_empty"), "\(r.stderr)")
        }
        // The export is fixed: the rerun reads it and sends every row (nothing was recorded as final).
        try dir.write("data/header-only.csv", (["token"] + tokens(1...4)).joined(separator: "\n") + "\n")
        let fixed = try herald.run(path)
        #expect(fixed.status == 0, "\(fixed.stdout)\(fixed.stderr)")
        #expect(sent("header-only") == 4)
    }

    @Test func blankLinesAndAnEmptyNDJSONFileAreNoAudienceEither() throws {
        try dir.write("data/blank.csv", "token\n\n\n")
        let csv = try job("blank", rows: nil)
        let r = try herald.run(csv)
        #expect(r.status == 2 && r.stderr.contains("blank.csv: a header and no data row"), "\(r.stderr)")
        try dir.write("data/nd.csv", "\n  \n")
        let nd = try job("nd", rows: nil) { $0.audience.format = "ndjson" }
        let n = try herald.run(nd)
        #expect(n.status == 2 && n.stderr.contains("nd.csv: no data row"), "\(n.stderr)")
    }

    @Test func allowEmptyFinishesAnEmptyAudience() throws {
        let path = try job("allowed", rows: []) { $0.audience.allowEmpty = true }
        let v = try herald(["validate", path.path])
        #expect(v.status == 0, "\(v.stdout)\(v.stderr)")
        let r = try herald.run(path)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(sent("allowed") == 0)
    }

    @Test func aPastDateIsRefusedBeforeTheRunStarts() throws {
        let path = try job("past", rows: tokens(1...3)) {
            $0.audience.timezoneField = "tz"
            $0.schedule = "{ local_time: { from: \"09:00\", to: \"11:00\" }, date: 2020-01-15 }"
        }
        try dir.write("data/past.csv", "token,tz\n" + tokens(1...3).map { "\($0),Pacific/Pago_Pago" }.joined(separator: "\n") + "\n")
        for command in ["validate", "run"] {
            let r = try herald([command, path.path])
            #expect(r.status == 2, "\(command): \(r.stdout)\(r.stderr)")
            #expect(r.stderr.contains("schedule.date 2020-01-15 is in the past") && r.stderr.contains("past.yaml"), "\(command): \(r.stderr)")
        }
        #expect(sent("past") == 0)
        // Nothing was recorded: `herald status` finds no run of the campaign.
        let status = try herald(["status", path.path])
        #expect(!status.stdout.contains("finished"), "\(status.stdout)\(status.stderr)")
        // Without the date, each recipient's next window: the run waits (wait: false → exit 4), it does not finish.
        let later = try job("past", rows: nil) {
            $0.audience.timezoneField = "tz"
            $0.schedule = "{ local_time: { from: \"09:00\", to: \"11:00\" }, wait: false }"
        }
        let r = try herald.run(later)
        #expect(r.status == 0 || r.status == 4, "\(r.stdout)\(r.stderr)")
    }
}
