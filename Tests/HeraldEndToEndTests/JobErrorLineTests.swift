import Foundation
import HeraldTestSupport
import Testing

/// Every job error names its file and line, those found after loading too: a template or Live
/// Activity rule (found by the payload compiler, from the YAML or JSON template file), and a key
/// YAML finds twice. `herald validate` and `herald run` say the same.
@Suite struct JobErrorLineTests {
    let dir = TemporaryDirectory("e2e-job-lines")

    let herald = Herald()

    /// A job of one recipient (`../a.csv`) with what `configure` sets.
    func job(_ name: String, _ configure: (inout TestJob) -> Void) throws -> JobFile {
        try dir.write("a.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        return try TestJob(name) { $0.audience.files = ["../a.csv"]; configure(&$0) }.write(in: dir)
    }

    /// `herald validate` and `herald run` both exit 2 saying `message`, given the number of the
    /// job file's line that holds `line` (nil: no line of the job is named).
    func expectError(_ job: JobFile, at line: String? = nil, _ message: (Int) -> String) throws {
        let expected = message(try line.map { try job.line(of: $0) } ?? 0)
        for command in ["validate", "run"] {
            let r = try herald([command, job.path])
            #expect(r.status == 2, "\(command): \(r.stdout)\(r.stderr)")
            #expect(r.stderr.contains(expected), "\(command): \(r.stderr)")
        }
    }

    @Test func aLiveActivityRuleNamesTheLineOfItsValue() throws {
        let la = try job("la") {
            $0.push.type = "liveactivity"
            $0.push.template = "aps:\n  event: pause\n  timestamp: 1\n  content-state: {}"
        }
        try expectError(la, at: "event: pause") { "la.yaml line \($0): push.template: aps.event must be one of start, update, end" }
    }

    @Test func aRuleAboutAPSAsAWholeNamesTheLineOfAPS() throws {
        let silent = try job("silent") {
            $0.push.type = "background"
            $0.push.priority = "5"
            $0.push.locales = "fr:\n  aps: { content-available: 1, badge: 1 }"
            $0.push.template = "{ aps: { content-available: 1 } }"
        }
        try expectError(silent, at: "aps: { content-available: 1, badge: 1 }") { "silent.yaml line \($0): push.locales.fr: a background push must not include" }
    }

    @Test func aTemplateFileNamesItself() throws {
        try dir.write("jobs/t.json", "{\n  \"aps\": {\n    \"alert\": \"hi\",\n    \"badge\": -1\n  }\n}\n")
        let file = try job("file") { $0.push.template = nil; $0.push.templateFile = "t.json" }
        try expectError(file) { _ in "t.json line 4: push.template: aps.badge must be" }
    }

    /// A placeholder whose field is no column of the CSV header, in every template, with no
    /// default: one error naming the field, what uses it and the header, not every row invalid.
    @Test func aTemplateFieldThatIsNoColumnIsOneError() throws {
        let column = try job("column") {
            $0.push.template = #"{ aps: { alert: "Hi {{first_name}}", badge: "{{unread:int|0}}" } }"#
            $0.push.locales = #"{ fr: { aps: { alert: "Salut {{first_name}}" } } }"#
        }
        try expectError(column) { _ in "a.csv line 1: header has no column \"first_name\" named by push.template at aps.alert, a placeholder with no default (columns: token)" }
        // Only one locale's template needs it: rows in that locale are invalid, the others go.
        try dir.write("b.csv", "token,locale\n" + String(repeating: "ab", count: 32) + ",de\n" + String(repeating: "cd", count: 32) + ",fr\n")
        let some = try TestJob("some") {
            $0.audience.files = ["../b.csv"]
            $0.audience.localeField = "locale"
            $0.audience.maxInvalidRows = "1"
            $0.push.template = #"{ aps: { alert: "Hi" } }"#
            $0.push.locales = #"{ fr: { aps: { alert: "Salut {{first_name}}" } } }"#
        }.write(in: dir)
        let r = try herald(["validate", some.path])
        #expect(r.status == 0 && r.stdout.contains("1 valid") && r.stdout.contains("missing_field 1"), "\(r.stdout)\(r.stderr)")
    }

    @Test func aKeyGivenTwiceNamesItsLine() throws {
        let twice = try job("twice") { $0.push.template = #"{ aps: { alert: "x", alert: "y" } }"# }
        try expectError(twice, at: #"alert: "x", alert: "y""#) { "twice.yaml line \($0): not valid YAML: \"alert\" given more than once in one mapping" }
    }
}
