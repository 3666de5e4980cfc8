import ArgumentParser
import Foundation
import HeraldCore
import HeraldDelivery
import HeraldState

struct Herald: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Bulk push-campaign runner for Apple Push Notification service (APNs).",
        discussion: """
            Exit codes of `herald run` (cron, systemd and Kubernetes rely on them):
              0   finished: every recipient reached a final state
              2   usage, configuration or audience error before sending
                  (every command exits 2 for bad usage or configuration)
              3   aborted by a fatal APNs error (key, certificate, topic, environment
                  guard: sandbox/production or topic mismatch): fix, rerun
              4   incomplete: rerun the same command to resume (signal, retries
                  exhausted or retry.max_elapsed, throttle.deadline, silent-push budget
                  deferrals, APNs server certificate not verified: check apns.ca_file,
                  a full disk or another storage failure of the state or report files)
              5   too many invalid audience rows (audience.max_invalid_rows)
              6   paused or cancelled by an operator (herald pause, herald cancel;
                  herald resume continues a paused campaign)
              75  another run holds the campaign's lock: try again later
            """,
        version: Herald.versions,
        subcommands: [RunCommand.self, StatusCommand.self, ValidateCommand.self, PreviewCommand.self, SimCommand.self, ReportCommand.self,
                      ChannelsCommand.self, PauseCommand.self, ResumeCommand.self, CancelCommand.self]
    )

    /// `herald --version`: herald's version and the C libraries it runs on, as loaded.
    static var versions: String {
        var lines = ["herald \(HeraldVersion.current)", "libcurl \(LinkedLibraries.libcurl)"]
        lines.append("nghttp2 \(LinkedLibraries.nghttp2)")
        lines.append(LinkedLibraries.openSSL)
        lines.append("SQLite \(StateStore.sqliteVersion)")
        return lines.joined(separator: "\n")
    }
}

/// The entry point. ArgumentParser exits 64 (EX_USAGE) for a usage error; herald's documented
/// contract is 2 for every usage or configuration error of every command, so that a wrapper
/// script or a Kubernetes `podFailurePolicy` needs one rule ("2: fix the job, do not retry"),
/// not two. Everything else (help, `ExitCode`s the commands throw) is ArgumentParser's own.
@main
enum HeraldMain {
    static func main() {
        MallocArenas.bound()
        do {
            var command = try Herald.parseAsRoot()
            try command.run()
        } catch {
            if Herald.exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((Herald.fullMessage(for: error) + "\n").utf8))
                exit(2)
            }
            Herald.exit(withError: error)
        }
    }
}
