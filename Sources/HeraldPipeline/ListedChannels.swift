import Foundation
import HeraldCore

/// `push.broadcast.channels` as audience records: each listed channel is a row with one field,
/// `channel_id`, located at the job file's line that lists it. The run records them, and
/// `herald validate` and `herald preview` read them, as they would an audience file's rows.
/// Each record names its app as an audience row's `audience.app_field` would (`AppRouting`
/// routes it): the mapping form's key, or the job's one app. Listed channels go to the job's
/// default environment (`apns.endpoint`): the job has no per-row environment for them.
public enum ListedChannels {
    public static func records(of spec: JobSpec) -> [AudienceRecord] {
        let file = URL(fileURLWithPath: spec.jobFile).lastPathComponent
        let onlyApp = spec.apns.apps.count == 1 ? spec.apns.apps[0].name : nil
        return (spec.push.broadcast?.channels ?? []).map { channel in
            AudienceRecord(location: RowLocation(file: file, line: channel.line), token: DeviceToken(broadcastChannel: channel.id),
                           fields: ["channel_id": .string(channel.id)], app: channel.app ?? onlyApp)
        }
    }

    /// What `AppRouting` names as the records' app field in its messages: the channels' apps come
    /// from the job's mapping, not from an audience field.
    static let appKey = "push.broadcast.channels"

    /// Whether the job lists channels per app (the mapping form).
    static func namesApps(_ spec: JobSpec) -> Bool {
        spec.push.broadcast?.channels.contains { $0.app != nil } ?? false
    }
}
