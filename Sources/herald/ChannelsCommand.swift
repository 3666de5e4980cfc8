import ArgumentParser
import Foundation
import HeraldCore
import HeraldDelivery
import HeraldJob
import HeraldPipeline

/// `herald channels create|list|show|delete`: broadcast channels for Live Activities (iOS 18),
/// for the app, credentials and environment of a job file.
struct ChannelsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channels",
        abstract: "Create, list, show and delete Live Activity broadcast channels (iOS 18) of a job's app.",
        discussion: """
            The app is the job's apns.topic (its bundle id), or with apns.apps the one --app names, \
            the credentials that app's auth or certificate, the host Apple's channel management host \
            for the job's environment or --environment: production \
            (api-manage-broadcast.push.apple.com:2196) or sandbox (…sandbox…:2195), or \
            apns.channels_endpoint / --channels-endpoint for any other endpoint (herald sim \
            --management-port). Exit codes as for `herald run`: 0 done; 2 usage, configuration, \
            or a request APNs cannot do as given (an unknown channel id); 3 a fatal APNs answer \
            (key, bundle id, broadcast capability, the app's channel limit); 4 no answer, 429 or \
            5xx: try again. To send to the channels, run a broadcast campaign: push.broadcast.channels, \
            or an audience with audience.channel_field (docs/live-activities.md).
            """,
        subcommands: [Create.self, List.self, Show.self, Delete.self]
    )

    struct Target: ParsableArguments {
        @Argument(help: "The job file (YAML).") var job: String
        @Option(help: "production, sandbox or https://host:port, instead of the job's apns.endpoint.") var endpoint: String?
        @Option(name: .customLong("ca-file"), help: "PEM CA bundle trusted instead of the system store.") var caFile: String?
        @Option(name: .customLong("channels-endpoint"), help: ArgumentHelp("https://host:port of the channel management API, instead of the job's apns.channels_endpoint.", valueName: "url"))
        var channelsEndpoint: String?
        @Option(help: ArgumentHelp("The app of apns.apps whose channels these are (required with more than one): its topic and its own key or certificate.", valueName: "name"))
        var app: String?
        @Option(help: ArgumentHelp("production or sandbox: the environment whose channels these are, instead of the job's apns.endpoint (channels are per environment).", valueName: "env"))
        var environment: String?
        @Flag(help: "Print one JSON object instead of text.") var json = false

        func validate() throws {
            if let environment, APNsEnvironment(name: environment) == nil {
                throw ValidationError("--environment must be production or sandbox, not \(environment)")
            }
        }

        func admin() throws -> ChannelAdmin {
            do {
                let spec = try JobLoader.load(path: job, overrides: JobOverrides(endpoint: endpoint, caFile: caFile, channelsEndpoint: channelsEndpoint,
                                                                                audienceUnread: true))
                return try ChannelAdmin(spec: spec, app: app, environment: environment.flatMap(APNsEnvironment.init(name:)),
                                        channelsEndpointGiven: channelsEndpoint != nil)
            } catch {
                throw Output.fail(error, during: .preparing)
            }
        }

        /// Runs `body`, mapping a refusal to its exit code and message.
        func attempt<T>(_ body: () throws -> T) throws -> T {
            do { return try body() } catch { throw Output.fail(error, during: .preparing) }
        }

        /// `object` with `app` added when `--app` named one: the keys of a one-app job stay as they were.
        func print(text: String, json object: [String: Any], admin: ChannelAdmin) {
            var object = object
            if let app = admin.app { object["app"] = app }
            if json {
                let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
                FileHandle.standardOutput.write(data + Data("\n".utf8))
            } else {
                FileHandle.standardOutput.write(Data((text + "\n").utf8))
            }
        }
    }

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a channel and print its id.",
            discussion: "--storage-policy none keeps nothing for offline devices (a higher publishing budget; broadcasts must then use apns-expiration 0); most-recent keeps the latest message for up to 8 hours. It cannot be changed later.")
        @OptionGroup var target: Target
        @Option(name: .customLong("storage-policy"), help: "none or most-recent (Apple's message-storage-policy 0 or 1).") var storagePolicy = "most-recent"

        func validate() throws {
            if ChannelManagementClient.StoragePolicy(name: storagePolicy) == nil {
                throw ValidationError("--storage-policy must be none or most-recent, not \(storagePolicy)")
            }
        }

        func run() throws {
            let admin = try target.admin()
            let policy = ChannelManagementClient.StoragePolicy(name: storagePolicy)!
            let made = try target.attempt { try admin.client.create(policy: policy) }
            target.print(text: made.channel,
                         json: ["channel_id": made.channel, "bundle_id": admin.bundleId, "storage_policy": policy.name,
                                "message_storage_policy": policy.rawValue, "apns_request_id": made.requestId], admin: admin)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the app's channels, one id per line.")
        @OptionGroup var target: Target

        func run() throws {
            let admin = try target.admin()
            let channels = try target.attempt { try admin.client.list() }
            target.print(text: channels.joined(separator: "\n"), json: ["bundle_id": admin.bundleId, "channels": channels], admin: admin)
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a channel's storage policy.")
        @OptionGroup var target: Target
        @Argument(help: "The channel id (base64), as create printed it.") var channel: String

        func run() throws {
            let admin = try target.admin()
            let policy = try target.attempt { try admin.client.read(channel) }
            target.print(text: "channel         \(channel)\nbundle          \(admin.bundleId)\nstorage policy  \(policy.name) (\(policy.rawValue))",
                         json: ["channel_id": channel, "bundle_id": admin.bundleId, "storage_policy": policy.name, "message_storage_policy": policy.rawValue],
                         admin: admin)
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a channel.",
            discussion: "Apple: deleting is irreversible, the id is never reused, and messages already stored may still be delivered.")
        @OptionGroup var target: Target
        @Argument(help: "The channel id (base64).") var channel: String

        func run() throws {
            let admin = try target.admin()
            try target.attempt { try admin.client.delete(channel) }
            target.print(text: "deleted \(channel)", json: ["deleted": channel, "bundle_id": admin.bundleId], admin: admin)
        }
    }
}
