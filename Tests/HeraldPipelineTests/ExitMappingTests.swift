import Foundation
import HeraldAudience
import HeraldCore
import HeraldJob
@testable import HeraldPipeline
import HeraldReports
import HeraldState
import Testing

/// `RunFailure(_:during:)`, the one mapping of failures to exit codes and operator messages.
@Suite struct ExitMappingTests {
    @Test func storageFailuresAreExit4AtEveryStageAndSayItIsTheDisk() {
        let failures: [any Error] = [
            StateError(path: "/s/c.sqlite", message: "SQLite error 13: database or disk is full", errno: nil, sqliteCode: 13),
            StateError(path: "/s/c.sqlite", message: "SQLite error 10: disk I/O error", errno: nil, sqliteCode: 10),
            StateError(path: "/s/c.sqlite", message: "cannot create", errno: ENOSPC),
            StateError(path: "/s/c.sqlite", message: "cannot create", errno: EROFS),
            ScratchFileError(description: "sorting device tokens: cannot write", code: ENOSPC),
            ReportError(path: "/r/deliveries.csv", why: "No space left on device", errno: ENOSPC),
            CampaignLockError.unusable(message: "cannot open lock file /s/c.sqlite.lock: Read-only file system", errno: EROFS),
        ]
        for error in failures {
            for stage in [RunStage.preparing, .sending, .reporting] {
                let f = RunFailure(error, during: stage)
                #expect(f.status == .incomplete, "\(error) during \(stage)")
                #expect(f.message.contains("the disk, not the job") && f.message.contains("rerun the same command"), "\(f.message)")
            }
        }
        #expect(RunFailure(failures[0], during: .preparing).message.hasPrefix("/s/c.sqlite: the disk (or quota) is full"))
    }

    @Test func otherStateFailuresDependOnTheStage() {
        let constraint = StateError(path: "/s/c.sqlite", message: "SQLite error 19: UNIQUE constraint failed", errno: nil, sqliteCode: 19)
        #expect(RunFailure(constraint, during: .preparing).status == .usage)
        #expect(RunFailure(constraint, during: .sending).status == .incomplete)
        #expect(RunFailure(constraint, during: .reporting).status == .incomplete)
        #expect(RunFailure(constraint, during: .preparing).message == constraint.description)
    }

    @Test func theJobAndItsInputsAreExit2WhateverTheStage() {
        let errors: [any Error] = [
            JobError(file: "job.yaml", line: 3, "apns.topic is required"),
            AudienceError.notFound(file: "a.csv"),
        ]
        for error in errors {
            for stage in [RunStage.preparing, .sending, .reporting] { #expect(RunFailure(error, during: stage).status == .usage, "\(error)") }
        }
    }

    @Test func aHeldLockIs75AndARunFailurePassesThrough() {
        #expect(RunFailure(CampaignLockError.busy(path: "/s/c.sqlite.lock"), during: .preparing).status == .locked)
        #expect(RunFailure(CampaignLockError.unusable(message: "cannot lock: Bad file descriptor", errno: EBADF), during: .preparing).status == .usage)
        let aborted = RunFailure(.aborted, "APNs refused the key")
        #expect(RunFailure(aborted, during: .sending).status == .aborted && RunFailure(aborted, during: .sending).message == "APNs refused the key")
    }
}
