import Foundation
import HeraldCore

/// `push.broadcast.channels` as audience records: each listed channel is a row with one field,
/// `channel_id`, located at the job file's line that lists it. The run records them, and
/// `herald validate` and `herald preview` read them, as they would an audience file's rows.
public enum ListedChannels {
    public static func records(of spec: JobSpec) -> [AudienceRecord] {
        let file = URL(fileURLWithPath: spec.jobFile).lastPathComponent
        return (spec.push.broadcast?.channels ?? []).map { channel in
            AudienceRecord(location: RowLocation(file: file, line: channel.line), token: DeviceToken(broadcastChannel: channel.id),
                           fields: ["channel_id": .string(channel.id)])
        }
    }
}
