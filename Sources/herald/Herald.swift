import ArgumentParser
import Foundation

@main
struct Herald: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Bulk push-campaign runner for Apple Push Notification service (APNs).",
        discussion: """
            Exit codes of `herald run`:
              0   finished: every recipient reached a final state
              2   usage, configuration or audience error before sending
              3   aborted by a fatal APNs error (auth, topic); fix and rerun
              4   incomplete: rerun the same command to resume (signal, retries exhausted)
              5   too many invalid rows
              75  another run holds the campaign's lock
            """,
        subcommands: [RunCommand.self, StatusCommand.self, ValidateCommand.self, PreviewCommand.self, SimCommand.self, ReportCommand.self]
    )
}
