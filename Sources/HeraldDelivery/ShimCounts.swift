internal import CCurlNghttp2

/// What CCurlNghttp2 did for one sender's connections (`herald_shim_counts`): each worker adds
/// the difference its thread's counts made over its run. For tests, which see through it that
/// each of the shims is in the path.
struct ShimCounts: Equatable {
    var resetsDropped = 0, resetsPassed = 0
    var framesCollected = 0, writesMade = 0
    var bodiesSplit = 0
    var answerFieldsTaken = 0, answerFieldsDropped = 0

    /// The calling thread's counts so far.
    static func onThisThread() -> ShimCounts {
        var c = herald_shim_counts()
        herald_shim_counts_on_this_thread(&c)
        return ShimCounts(resetsDropped: Int(c.resets_dropped), resetsPassed: Int(c.resets_passed),
                          framesCollected: Int(c.frames_collected), writesMade: Int(c.writes_made),
                          bodiesSplit: Int(c.bodies_split),
                          answerFieldsTaken: Int(c.answer_fields_taken), answerFieldsDropped: Int(c.answer_fields_dropped))
    }

    /// What the calling thread counted since `before`.
    static func onThisThread(since before: ShimCounts) -> ShimCounts {
        var c = onThisThread()
        c.add(before, sign: -1)
        return c
    }

    mutating func add(_ other: ShimCounts, sign: Int = 1) {
        resetsDropped += sign * other.resetsDropped
        resetsPassed += sign * other.resetsPassed
        framesCollected += sign * other.framesCollected
        writesMade += sign * other.writesMade
        bodiesSplit += sign * other.bodiesSplit
        answerFieldsTaken += sign * other.answerFieldsTaken
        answerFieldsDropped += sign * other.answerFieldsDropped
    }
}
