import Foundation
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// One `events.file` shared by two campaigns running at once, on the built `herald run`, while a
/// third writer (the test) holds the file's flock in the middle of its own batch: neither run
/// cuts that unfinished line or appends after it until the lock is released, and in the end the
/// file holds every event of both campaigns exactly once, each on a whole line of JSON.
extension DeliveryEventsTests {
    @Test func twoCampaignsAppendWholeBatchesToOneEventsFile() throws {
        let file = dir.file("out/shared-events.ndjson")
        try FileManager.default.createDirectory(atPath: dir.file("out"), withIntermediateDirectories: true)
        let fd = open(file, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        try #require(fd >= 0 && flock(fd, LOCK_EX) == 0)
        defer { close(fd) }
        let head = #"{"writer":"test","#
        #expect(write(fd, head, head.utf8.count) == head.utf8.count)

        let names = ["events-shared-a", "events-shared-b"]
        let runs = try names.map { name in
            let path = try job(name, count: 1_500, events: "{ file: ../out/shared-events.ndjson, batch: 100, flush: 1s, timeout: 2m }")
            return try heraldWithoutSecret.start(["run", path.path, "--progress", "never"])
        }
        for (name, run) in zip(names, runs) {
            #expect(RequestLog.wait(for: 1_500, in: dir.file("out/\(name).ndjson")) { run.process.isRunning } == 1_500, "\(name) sent everything")
        }
        Thread.sleep(forTimeInterval: 2)   // past `flush`: both runs have batches to append
        #expect(try String(contentsOfFile: file, encoding: .utf8) == head, "nothing cut or appended while the lock is held")
        #expect(runs.allSatisfy { $0.process.isRunning }, "the runs wait to deliver their events")

        let tail = "\"batch\":1}\n"
        #expect(write(fd, tail, tail.utf8.count) == tail.utf8.count)
        flock(fd, LOCK_UN)
        for run in runs {
            run.process.waitUntilExit()
            #expect(run.process.terminationStatus == 0)
        }

        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.last == "", "the file ends with a whole line")
        let objects = try lines.dropLast().map { line in
            try #require(try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "a whole JSON line: \(line.prefix(120))")
        }
        #expect(objects.first?["writer"] as? String == "test", "the other writer's batch stays whole and first")
        let events = objects.dropFirst()
        let ids = events.map { $0["event_id"] as? String ?? "" }
        #expect(ids.count == 3_000 && Set(ids).count == 3_000, "every event exactly once: \(ids.count) lines, \(Set(ids).count) ids")
        for name in names {
            expectEveryOutcome(events.filter { $0["campaign"] as? String == name }, match: try outcomes(name), campaign: name)
        }
    }
}
