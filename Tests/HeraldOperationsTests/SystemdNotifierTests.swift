import Foundation
import HeraldOperations
import HeraldTestSupport
import Testing

/// sd_notify datagrams on a real AF_UNIX socket: once STOPPING=1 is sent, no STATUS follows
/// (`systemctl status` keeps saying the run is stopping, not that it sends again).
@Suite struct SystemdNotifierTests {
    let dir = TemporaryDirectory("sd-notify")

    @Test func noStatusAfterStopping() throws {
        let receiver = try DatagramReceiver(path: dir.file("notify.sock"))
        defer { receiver.close() }
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": dir.file("notify.sock")]))
        notifier.ready(status: "sending")
        notifier.status("1,000 sent")
        notifier.stopping()
        notifier.status("2,000 sent")
        notifier.stopping()
        notifier.ready(status: "sending")
        // Everything that arrives within the wait.
        _ = receiver.wait(timeout: 0.5) { _ in false }
        #expect(receiver.all == ["READY=1\nSTATUS=sending", "STATUS=1,000 sent", "STOPPING=1\nSTATUS=stopping after the requests in flight"],
                "\(receiver.all)")
    }
}
