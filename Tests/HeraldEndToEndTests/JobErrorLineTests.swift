import Foundation
import HeraldTestSupport
import Testing

/// Every job error names its file and line, those found after loading too: a template or Live
/// Activity rule (found by the payload compiler, from the YAML or JSON template file), and a key
/// YAML finds twice. `herald validate` and `herald run` say the same.
@Suite struct JobErrorLineTests {
    let dir = TemporaryDirectory("e2e-job-lines")

    func herald(_ args: [String]) throws -> ProcessRunner.Result { try ProcessRunner.run(ProcessRunner.heraldBinary, args, cwd: "/") }

    func expectError(_ name: String, _ job: String, _ message: String) throws {
        try dir.write("a.csv", "token\n" + String(repeating: "ab", count: 32) + "\n")
        let path = try dir.write("jobs/\(name).yaml", job)
        for command in ["validate", "run"] {
            let r = try herald([command, path])
            #expect(r.status == 2, "\(command): \(r.stdout)\(r.stderr)")
            #expect(r.stderr.contains(message), "\(command): \(r.stderr)")
        }
    }

    @Test func aLiveActivityRuleNamesTheLineOfItsValue() throws {
        try expectError("la", """
            campaign: la
            audience: { files: [../a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push:
              type: liveactivity
              template:
                aps:
                  event: pause
                  timestamp: 1
                  content-state: {}
            """, "la.yaml line 8: push.template: aps.event must be one of start, update, end")
    }

    @Test func aRuleAboutAPSAsAWholeNamesTheLineOfAPS() throws {
        try expectError("silent", """
            campaign: silent
            audience: { files: [../a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push:
              type: background
              priority: 5
              locales:
                fr:
                  aps: { content-available: 1, badge: 1 }
              template: { aps: { content-available: 1 } }
            """, "silent.yaml line 9: push.locales.fr: a background push must not include")
    }

    @Test func aTemplateFileNamesItself() throws {
        try dir.write("jobs/t.json", "{\n  \"aps\": {\n    \"alert\": \"hi\",\n    \"badge\": -1\n  }\n}\n")
        try expectError("file", """
            campaign: file
            audience: { files: [../a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push: { template_file: t.json }
            """, "t.json line 4: push.template: aps.badge must be")
    }

    /// A placeholder whose field is no column of the CSV header, in every template, with no
    /// default: one error naming the field, what uses it and the header, not every row invalid.
    @Test func aTemplateFieldThatIsNoColumnIsOneError() throws {
        try expectError("column", """
            campaign: column
            audience: { files: [../a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push:
              template: { aps: { alert: "Hi {{first_name}}", badge: "{{unread:int|0}}" } }
              locales: { fr: { aps: { alert: "Salut {{first_name}}" } } }
            """, "a.csv line 1: header has no column \"first_name\" named by push.template at aps.alert, a placeholder with no default (columns: token)")
        // Only one locale's template needs it: rows in that locale are invalid, the others go.
        try dir.write("b.csv", "token,locale\n" + String(repeating: "ab", count: 32) + ",de\n" + String(repeating: "cd", count: 32) + ",fr\n")
        let some = try dir.write("jobs/some.yaml", """
            campaign: some
            audience: { files: [../b.csv], locale_field: locale, max_invalid_rows: 1 }
            apns: { endpoint: simulator, topic: com.example.app }
            push:
              template: { aps: { alert: "Hi" } }
              locales: { fr: { aps: { alert: "Salut {{first_name}}" } } }
            """)
        let r = try herald(["validate", some])
        #expect(r.status == 0 && r.stdout.contains("1 valid") && r.stdout.contains("missing_field 1"), "\(r.stdout)\(r.stderr)")
    }

    @Test func aKeyGivenTwiceNamesItsLine() throws {
        try expectError("twice", """
            campaign: twice
            audience: { files: [../a.csv] }
            apns: { endpoint: simulator, topic: com.example.app }
            push:
              template: { aps: { alert: "x", alert: "y" } }
            """, "twice.yaml line 5: not valid YAML: \"alert\" given more than once in one mapping")
    }
}
