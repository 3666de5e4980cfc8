/// The size of a rendered Live Activity payload's `aps.content-state`. APNs takes 4 KB (5 KB for a
/// broadcast) of payload, but the device applies its own limit to the content state alone: "The
/// dynamic data of a Live Activity that's encoded by `ContentState` can't exceed 4KB"
/// (https://developer.apple.com/documentation/activitykit/activityattributes/contentstate). An
/// update over it is accepted by APNs and dropped by the device, so it is caught here, per
/// recipient, as the payload is rendered. A scan of the rendered bytes: a few hundred per push,
/// and only for `liveactivity` pushes.
enum ContentStateSize {
    static let deviceLimit = 4_096

    /// Bytes of `aps.content-state`'s value in compact JSON, or nil when there is none.
    static func bytes(_ json: [UInt8]) -> Int? {
        var containers: [Bool] = []   // true: an object
        var expectKey = false
        var key: ArraySlice<UInt8> = []
        var apsDepth = -1
        var nextIsAps = false
        var measuring: (start: Int, depth: Int)?
        var i = 0
        while i < json.count {
            switch json[i] {
            case UInt8(ascii: "\""):
                let start = i + 1
                i += 1
                while i < json.count && json[i] != UInt8(ascii: "\"") { i += json[i] == UInt8(ascii: "\\") ? 2 : 1 }
                if expectKey { key = json[start..<min(i, json.count)]; expectKey = false } else { nextIsAps = false }
            case UInt8(ascii: ":"):
                if containers.count == 1 && key.elementsEqual("aps".utf8) { nextIsAps = true }
                if containers.count == apsDepth && key.elementsEqual("content-state".utf8) { measuring = (i + 1, containers.count) }
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                containers.append(json[i] == UInt8(ascii: "{"))
                expectKey = containers.last!
                if nextIsAps { apsDepth = containers.count; nextIsAps = false }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if let m = measuring, containers.count == m.depth { return i - m.start }
                if containers.count == apsDepth { apsDepth = -1 }
                containers.removeLast()
            case UInt8(ascii: ","):
                if let m = measuring, containers.count == m.depth { return i - m.start }
                expectKey = containers.last ?? false
            default:
                nextIsAps = nextIsAps && json[i] == UInt8(ascii: " ")
            }
            i += 1
        }
        return nil
    }
}
